package dev.muon.examples;

import dev.muon.examples.study.MuonStudy;
import dev.muon.examples.study.SecondStudy;
import dev.muon.examples.study.StudyArguments;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every Maven command in the README and in {@code docs/} works after the README's two commands (issue 30, item 4:
 * {@code -pl examples} without {@code -am} failed on a fresh clone, for want of muon-core's test jar). It runs no
 * training: a command must select its modules so that Maven builds what they need, name an example that exists,
 * give it arguments that it accepts, and name data files that exist.
 */
class DocCommandsTest {
    private static final Path ROOT = Path.of("..");
    /** A command in a code block or a code span: from {@code mvn} to the end of the line or span. */
    private static final Pattern MVN = Pattern.compile("(?m)(?:^|`)\\s*((?:[A-Z_]+=\\S+\\s+)*mvn\\s[^`\\n]*)");
    /** Modules that need nothing else of the reactor: {@code -pl} alone builds them. */
    private static final List<String> STANDALONE = List.of("muon-core", "muon-bom");

    record Command(String page, String text, List<String> words) {
        boolean has(String flag) {
            return words.contains(flag);
        }

        String value(String prefix) {
            return words.stream().filter(w -> w.startsWith(prefix)).map(w -> w.substring(prefix.length()))
                    .findFirst().orElse(null);
        }
    }

    static List<Command> commands() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        List<Command> commands = new ArrayList<>();
        for (Path page : pages) {
            String text = Files.readString(page, StandardCharsets.UTF_8).replace("\\\n", " ");
            Matcher m = MVN.matcher(text);
            while (m.find()) {
                commands.add(new Command(page.getFileName().toString(), m.group(1).trim(), words(m.group(1))));
            }
        }
        return commands;
    }

    /** Splits like a shell: spaces separate words, quotes (double or single) keep them together and are dropped. */
    static List<String> words(String command) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        char quote = 0;
        boolean any = false;
        for (char c : command.trim().toCharArray()) {
            if ((c == '"' || c == '\'') && (quote == 0 || quote == c)) {
                quote = quote == 0 ? c : 0;
                any = true;
            } else if (Character.isWhitespace(c) && quote == 0) {
                if (any) {
                    words.add(word.toString());
                    word.setLength(0);
                    any = false;
                }
            } else {
                word.append(c);
                any = true;
            }
        }
        if (any) {
            words.add(word.toString());
        }
        return words;
    }

    @Test
    void theDocsHaveTheCommandsThisTestChecks() throws IOException {
        List<Command> all = commands();
        assertTrue(all.stream().anyMatch(c -> c.page().equals("README.md") && c.text().equals(
                "mvn -B -q -Ptrain -DskipTests package")), "the README's main job is not found: " + all);
        assertTrue(all.stream().filter(c -> c.value("-Dexample.main=") != null).count() >= 3,
                "the examples' commands are not found: " + all);
    }

    @Test
    void everyModuleSelection_buildsWhatItNeeds() throws IOException {
        for (Command c : commands()) {
            int pl = c.words().indexOf("-pl");
            if (pl < 0) {
                continue;
            }
            String modules = c.words().get(pl + 1);
            boolean standalone = List.of(modules.split(",")).stream().allMatch(STANDALONE::contains);
            assertTrue(standalone || c.has("-am"), c.page() + ": `" + c.text() + "` selects " + modules
                    + " without -am: after the README's commands their sibling modules are not in ~/.m2");
        }
    }

    @Test
    void everyExampleCommand_namesAnExample_withArgumentsItAccepts() throws Exception {
        int checked = 0;
        for (Command c : commands()) {
            if (!c.has("-Ptrain")) {
                continue;
            }
            String main = c.value("-Dexample.main=");
            String args = c.value("-Dexample.args=");
            String[] argv = args == null ? new String[0] : words(args).toArray(String[]::new);
            String where = c.page() + ": `" + c.text() + "`";
            String name = main == null ? FashionMnist.class.getName() : main;
            Class<?> example = Class.forName(name);
            assertEquals(void.class, example.getMethod("main", String[].class).getReturnType(), where);
            try {
                accepts(example, argv);
            } catch (CommandLine.ParameterException | IllegalArgumentException e) {
                throw new AssertionError(where + " passes arguments the example refuses: " + e.getMessage(), e);
            }
            checked++;
        }
        assertTrue(checked >= 5, "only " + checked + " example commands found");
    }

    /** Parses and validates the arguments as the example would, without running it. */
    private static void accepts(Class<?> example, String[] argv) {
        if (example == FashionMnist.class) {
            CommandLine cli = FashionMnist.commandLine();
            cli.parseArgs(argv);
            ((FashionMnist) cli.getCommand()).validate(cli.getCommandSpec());
        } else if (example == TinyGpt.class) {
            TinyGpt.Settings.parse(argv);
        } else if (example == JmhQuickstart.class) {
            CommandLine cli = ExampleCli.commandLine(new JmhQuickstart());
            cli.parseArgs(argv);
            ((JmhQuickstart) cli.getCommand()).shapeTexts.forEach(JmhQuickstart::parseShape);
        } else if (example == MuonStudy.class) {
            StudyArguments.accept(argv);
        } else if (example == SecondStudy.class) {
            StudyArguments.acceptSecond(argv);
        } else if (example == Replot.class) {
            CommandLine cli = ExampleCli.commandLine(new Replot());
            CommandLine.ParseResult parsed = cli.parseArgs(argv);
            // The data a figure is redrawn from must be there: paths are seen from the examples module.
            for (CommandLine.Model.OptionSpec o : parsed.subcommand().matchedOptions()) {
                if (List.of("--epochs", "--steps", "--summary", "--csv").contains(o.longestName())) {
                    Path file = o.getValue();
                    assertTrue(Files.isRegularFile(file), file + " does not exist");
                }
            }
        } else {
            ExampleCli.commandLine(newInstance(example)).parseArgs(argv);
        }
    }

    private static Object newInstance(Class<?> example) {
        try {
            java.lang.reflect.Constructor<?> constructor = example.getDeclaredConstructor();
            constructor.setAccessible(true);
            return constructor.newInstance();
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(example + " has no constructor picocli can use", e);
        }
    }
}
