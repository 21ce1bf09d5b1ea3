package dev.muon.examples.djl;

import org.junit.jupiter.api.Test;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every code block of {@code docs/djl.md} in the context a user pastes it into. A {@code java} block follows a marker
 * {@code <!-- snippet: ID paste: TEMPLATE#REGION [with: ID...] [bias-free] -->}: its {@code import} lines go to the
 * imports of the template (a small program of {@code src/test/resources/dev/muon/examples/djl/paste}: DJL's MNIST
 * example's shape, or a training method of one's own), its other lines replace the template's region, verbatim; the
 * blocks named after {@code with:} are pasted first, as a reader pastes the blocks above. A first line
 * {@code // <code>} must be the region's first line: the line the block replaces. The result is compiled with
 * {@code javac} against this module's test class path and run. A {@code diff} block shows lines of
 * {@link FashionMnistDjl}.
 */
class DocSnippetsDjlTest {
    private static final Path PAGE = Path.of("..", "docs", "djl.md");
    private static final Pattern BLOCK = Pattern.compile(
            "(?:<!-- snippet: (\\S+) paste: (\\w+)#(\\w+)((?: with: \\S+)*)( bias-free)? -->\\n)?```(java|diff)\\n(.*?)```",
            Pattern.DOTALL);
    private static final Pattern REGION = Pattern.compile("( *)// PASTE (\\w+)\\n(.*?)^ *// END\\n",
            Pattern.DOTALL | Pattern.MULTILINE);

    /** One java block and where it goes. */
    record Snippet(String id, String template, String region, List<String> with, boolean biasFree, String code) {
    }

    private static String read(Path path) throws IOException {
        return Files.readString(path, StandardCharsets.UTF_8);
    }

    private static String template(String name) throws IOException {
        try (InputStream in = DocSnippetsDjlTest.class.getResourceAsStream("paste/" + name + ".java")) {
            assertNotNull(in, "no template paste/" + name + ".java");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static Map<String, Snippet> snippets() throws IOException {
        Map<String, Snippet> out = new LinkedHashMap<>();
        Matcher m = BLOCK.matcher(read(PAGE));
        while (m.find()) {
            if (!m.group(6).equals("java")) {
                continue;
            }
            assertNotNull(m.group(1), "djl.md: a java block without its <!-- snippet: ... paste: ... --> marker:\n"
                    + m.group(7));
            List<String> with = new ArrayList<>();
            for (String w : m.group(4).trim().split("\\s+")) {
                if (!w.isEmpty() && !w.equals("with:")) {
                    with.add(w);
                }
            }
            out.put(m.group(1), new Snippet(m.group(1), m.group(2), m.group(3), with, m.group(5) != null,
                    m.group(7)));
        }
        return out;
    }

    /** The template with the snippets pasted: imports after the package line, the rest into the region. */
    static String pasted(String template, List<Snippet> snippets) {
        String source = template;
        List<String> imports = new ArrayList<>();
        for (Snippet s : snippets) {
            List<String> body = new ArrayList<>();
            for (String line : s.code().split("\n", -1)) {
                if (line.startsWith("import ")) {
                    imports.add(line);
                } else {
                    body.add(line);
                }
            }
            while (!body.isEmpty() && body.get(0).isBlank()) {
                body.remove(0);
            }
            Matcher region = REGION.matcher(source);
            boolean found = false;
            while (region.find()) {
                if (!region.group(2).equals(s.region())) {
                    continue;
                }
                found = true;
                String indent = region.group(1);
                String original = region.group(3).strip().split("\n")[0].strip();
                if (!body.isEmpty() && body.get(0).startsWith("// ")) {
                    assertEquals(original, body.get(0).substring(3).strip(), "snippet " + s.id() + ": its first line "
                            + "must be the line it replaces in " + s.template() + "#" + s.region());
                }
                StringBuilder replacement = new StringBuilder();
                for (String line : body) {
                    replacement.append(line.isBlank() ? "" : indent + line).append('\n');
                }
                source = source.substring(0, region.start()) + replacement + source.substring(region.end());
                break;
            }
            assertTrue(found, "snippet " + s.id() + ": " + s.template() + " has no region " + s.region());
        }
        int afterPackage = source.indexOf('\n', source.indexOf("package ")) + 1;
        return source.substring(0, afterPackage) + "\n" + String.join("\n", imports) + "\n"
                + source.substring(afterPackage);
    }

    /**
     * Compiles one class of package {@code paste} and, if asked, runs its {@code run()}.
     *
     * @return what {@code run()} returned, or null when not run
     */
    static Object compileAndRun(String className, String source, boolean biasFree, Path dir, boolean run)
            throws Exception {
        Path file = dir.resolve("paste").resolve(className + ".java");
        Files.createDirectories(file.getParent());
        Files.writeString(file, source, StandardCharsets.UTF_8);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, Locale.ROOT,
                StandardCharsets.UTF_8)) {
            boolean ok = javac.getTask(null, files, diagnostics, List.of("-classpath", classPath, "-d",
                    dir.toString(), "-proc:none", "-Xlint:none"), null, files.getJavaFileObjects(file)).call();
            StringBuilder errors = new StringBuilder();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                errors.append(d.getKind()).append(" line ").append(d.getLineNumber()).append(": ")
                        .append(d.getMessage(Locale.ROOT)).append('\n');
            }
            assertTrue(ok, "the pasted snippet does not compile:\n" + errors + "\n" + numbered(source));
        }
        if (!run) {
            return null;
        }
        try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()},
                DocSnippetsDjlTest.class.getClassLoader())) {
            Class<?> type = loader.loadClass("paste." + className);
            if (biasFree) {
                java.lang.reflect.Field bias = type.getDeclaredField("bias");
                bias.setAccessible(true);
                bias.setBoolean(null, false);
            }
            Method entry = type.getMethod("run");
            try {
                return entry.invoke(null);
            } catch (InvocationTargetException e) {
                throw e.getCause() instanceof Exception ex ? ex : new IllegalStateException(e.getCause());
            }
        }
    }

    private static String numbered(String source) {
        StringBuilder out = new StringBuilder();
        String[] lines = source.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            out.append(String.format(Locale.ROOT, "%3d  %s%n", i + 1, lines[i]));
        }
        return out.toString();
    }

    @Test
    void everyJavaBlock_compilesAndRuns_whereAUserPastesIt(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Map<String, Snippet> snippets = snippets();
        assertTrue(snippets.size() >= 6, "djl.md has " + snippets.size() + " java blocks: " + snippets.keySet());
        // A block that a later one is pasted with runs as part of that one (alone it may do nothing to check).
        java.util.Set<String> before = new java.util.HashSet<>();
        snippets.values().forEach(s -> before.addAll(s.with()));
        int n = 0;
        for (Snippet s : snippets.values()) {
            List<Snippet> chain = new ArrayList<>();
            for (String id : s.with()) {
                Snippet previous = snippets.get(id);
                assertNotNull(previous, "snippet " + s.id() + " names an unknown snippet " + id);
                chain.add(previous);
            }
            chain.add(s);
            String source = pasted(template(s.template()), chain);
            boolean run = !before.contains(s.id());
            Object result = compileAndRun(s.template(), source, s.biasFree(), dir.resolve("s" + n++), run);
            if (!run) {
                continue;
            }
            if (result instanceof float[] losses) {
                assertTrue(losses[1] < losses[0], s.id() + " trains: loss " + losses[0] + " -> " + losses[1]);
            } else {
                assertNotNull(result, s.id());
            }
        }
    }

    @Test
    void theDiffBlock_showsLinesOfTheExample() throws IOException {
        String example = read(Path.of("src/main/java/dev/muon/examples/djl/FashionMnistDjl.java"));
        Matcher m = BLOCK.matcher(read(PAGE));
        int diffs = 0;
        while (m.find()) {
            if (m.group(6).equals("diff")) {
                diffs++;
                for (String line : m.group(7).split("\n")) {
                    String code = line.isEmpty() ? "" : line.substring(1).trim();
                    assertTrue(code.isEmpty() || example.contains(code),
                            "djl.md: this diff line is not in FashionMnistDjl.java: " + code);
                }
            }
        }
        assertEquals(1, diffs);
    }
}
