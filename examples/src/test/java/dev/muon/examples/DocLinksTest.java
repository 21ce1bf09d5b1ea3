package dev.muon.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every relative link of the README and the docs leads somewhere: the file exists, and a {@code #fragment} names a
 * heading of that page as GitHub renders its id. A renamed section otherwise leaves links that silently land at the
 * top of a page.
 */
class DocLinksTest {
    private static final Path ROOT = Path.of("..");
    /** {@code [text](target)}, not an image's; the target up to the closing parenthesis. */
    private static final Pattern LINK = Pattern.compile("(?<!!)\\[[^\\]]*]\\(([^)\\s]+)\\)");

    static Stream<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>();
        pages.add(ROOT.resolve("README.md"));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages.stream();
    }

    @ParameterizedTest
    @MethodSource("pages")
    void everyRelativeLink_findsItsFileAndHeading(Path page) throws IOException {
        List<String> broken = new ArrayList<>();
        for (String target : links(read(page))) {
            if (target.matches("[a-z]+:.*")) {
                continue;   // http:, https:, mailto: are not ours to check offline
            }
            int hash = target.indexOf('#');
            String file = hash < 0 ? target : target.substring(0, hash);
            Path linked = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
            if (!Files.exists(linked)) {
                broken.add(target + " (no file " + linked + ")");
                continue;
            }
            if (hash >= 0 && linked.toString().endsWith(".md")) {
                String fragment = target.substring(hash + 1);
                if (!headingIds(read(linked)).contains(fragment)) {
                    broken.add(target + " (no heading with id '" + fragment + "' in " + linked.getFileName() + ")");
                }
            }
        }
        assertEquals(List.of(), broken, page + " has links that lead nowhere");
    }

    /** The id rule itself, on headings of these docs whose ids other pages link to. */
    @Test
    void headingIds_followGitHub() {
        Set<String> ids = headingIds("## Split and per-head Newton–Schulz (`RowSplit`)\n"
                + "## `dev.muon.MuonAdamW`: one optimizer for a whole model\n## Errors\n```\n# not a heading\n```\n"
                + "## Errors\n");
        assertEquals(new LinkedHashSet<>(List.of("split-and-per-head-newtonschulz-rowsplit",
                "devmuonmuonadamw-one-optimizer-for-a-whole-model", "errors", "errors-1")), ids);
    }

    private static String read(Path path) throws IOException {
        return Files.readString(path, StandardCharsets.UTF_8);
    }

    /** The link targets of a page, outside code blocks and code spans. */
    private static List<String> links(String markdown) {
        List<String> out = new ArrayList<>();
        for (String line : proseLines(markdown)) {
            Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", "``"));
            while (m.find()) {
                out.add(m.group(1));
            }
        }
        return out;
    }

    /**
     * GitHub's heading ids: the heading's text lowercased, every character that is not a letter, a digit, a space,
     * a hyphen or an underscore removed, spaces made hyphens; a repeated id gets {@code -1}, {@code -2}, ….
     */
    static Set<String> headingIds(String markdown) {
        Set<String> ids = new LinkedHashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : proseLines(markdown)) {
            Matcher m = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$").matcher(line);
            if (!m.matches()) {
                continue;
            }
            String id = m.group(1).toLowerCase(Locale.ROOT)
                    .replaceAll("[^\\p{L}\\p{N} _-]", "")
                    .replace(' ', '-');
            int n = seen.merge(id, 1, Integer::sum) - 1;
            ids.add(n == 0 ? id : id + "-" + n);
        }
        return ids;
    }

    /** The lines of a page outside fenced code blocks. */
    private static List<String> proseLines(String markdown) {
        List<String> out = new ArrayList<>();
        boolean fenced = false;
        for (String line : markdown.split("\n")) {
            if (line.stripLeading().startsWith("```")) {
                fenced = !fenced;
            } else if (!fenced) {
                out.add(line);
            }
        }
        return out;
    }
}
