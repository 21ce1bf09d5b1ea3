package dev.muon.examples;

import dev.muon.examples.study.MuonStudy;
import dev.muon.examples.study.SecondStudy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a user sees when an example's command line or files are wrong (issue 30, items 5 to 8): one line on stderr
 * that names the file or option and the rule, exit status 2 for usage and 1 for data or output, no stack trace
 * unless {@code --debug}; an explicit {@code --data} is never replaced by another copy.
 */
public class ExampleErrorsTest {
    @TempDir
    Path dir;

    /** What a run printed and returned. */
    public record Outcome(int exitCode, String out, String err) {
        /** The lines of stderr. */
        public List<String> errLines() {
            return err.lines().filter(l -> !l.isBlank()).toList();
        }
    }

    /**
     * Runs the command line as {@code main} would, capturing what it prints.
     *
     * @param cli  the example's command line
     * @param args its arguments
     * @return the exit status and what went to stdout and stderr
     */
    public static Outcome run(CommandLine cli, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int code = cli.execute(args);
        return new Outcome(code, out.toString(), err.toString());
    }

    /** One example, as picocli runs it from main. */
    record Example(String name, Supplier<CommandLine> cli) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Example> examples() {
        return Stream.of(new Example("FashionMnist", FashionMnist::commandLine),
                new Example("TinyGpt", () -> ExampleCli.commandLine(new TinyGpt.Options())),
                new Example("JmhQuickstart", () -> ExampleCli.commandLine(new JmhQuickstart())),
                new Example("QuickStart", () -> ExampleCli.commandLine(new QuickStart())),
                new Example("OrthogonalityTable", () -> ExampleCli.commandLine(new OrthogonalityTable())),
                new Example("MuonStudy", () -> ExampleCli.commandLine(new MuonStudy())),
                new Example("SecondStudy", () -> ExampleCli.commandLine(new SecondStudy())));
    }

    @ParameterizedTest
    @MethodSource("examples")
    void version_printsTheExamplesVersion(Example example) {
        Outcome o = run(example.cli().get(), "--version");
        assertEquals(0, o.exitCode(), o.err());
        assertEquals(example.name() + " " + ExampleCli.version(), o.out().trim());
        assertTrue(ExampleCli.version().matches("\\d+\\.\\d+\\.\\d+.*"), ExampleCli.version());
    }

    @ParameterizedTest
    @MethodSource("examples")
    void unknownOption_isOneLine_exitTwo(Example example) {
        Outcome o = run(example.cli().get(), "--no-such-option", "3");
        assertEquals(ExampleCli.USAGE, o.exitCode());
        assertEquals(1, o.errLines().size(), o.err());
        String line = o.errLines().get(0);
        assertTrue(line.startsWith(example.name() + ": Unknown option") && line.contains("'--no-such-option'")
                && line.endsWith(" (--help lists the options)"), line);
    }

    @Test
    void debug_addsTheStackTrace() {
        Outcome o = run(FashionMnist.commandLine(), "--epochs", "0", "--debug");
        assertEquals(ExampleCli.USAGE, o.exitCode());
        assertEquals("FashionMnist: --epochs must be >= 1, got 0 (--help lists the options)", o.errLines().get(0));
        assertTrue(o.err().contains("\tat "), "a stack trace with --debug:\n" + o.err());
    }

    /** A Fashion-MNIST folder whose four files are fine, to break one of. */
    private Path dataSet(String name) throws IOException {
        Path data = Files.createDirectories(dir.resolve(name));
        IdxFileTest.write(data.resolve("train-images-idx3-ubyte.gz"), IdxFileTest.idx(0x08, new int[] {3, 28, 28},
                new byte[3 * 28 * 28]));
        IdxFileTest.write(data.resolve("train-labels-idx1-ubyte.gz"), IdxFileTest.idx(0x08, new int[] {3},
                new byte[] {0, 1, 2}));
        IdxFileTest.write(data.resolve("t10k-images-idx3-ubyte.gz"), IdxFileTest.idx(0x08, new int[] {2, 28, 28},
                new byte[2 * 28 * 28]));
        IdxFileTest.write(data.resolve("t10k-labels-idx1-ubyte.gz"), IdxFileTest.idx(0x08, new int[] {2},
                new byte[] {0, 1}));
        return data;
    }

    /** {@link #dataSet} with one file's contents replaced by an IDX file, as {@code --data DIR}. */
    private List<String> dataSetWith(String name, String file, byte[] idx) throws IOException {
        Path data = dataSet(name);
        IdxFileTest.write(data.resolve(file), idx);
        return List.of("--data", data.toString());
    }

    /** How a row breaks the data or the output: returns the arguments, {DIR} standing for the temp folder. */
    interface Breakage {
        List<String> apply(ExampleErrorsTest test) throws IOException;
    }

    static Arguments row(String what, Breakage breakage, int exitCode, String... expected) {
        return Arguments.of(what, breakage, exitCode, List.of(expected));
    }

    static Stream<Arguments> fashionMnistErrors() {
        return Stream.of(
                row("--data names no folder", t -> List.of("--data", t.dir.resolve("missing").toString()),
                        ExampleCli.DATA, "--data {DIR}/missing: no such folder"),
                row("--data names a file", t -> List.of("--data",
                        Files.writeString(t.dir.resolve("file"), "x").toString()),
                        ExampleCli.DATA, "--data {DIR}/file: not a folder"),
                row("--data holds the training files only", t -> {
                    Path data = t.dataSet("train-only");
                    Files.delete(data.resolve("t10k-images-idx3-ubyte.gz"));
                    Files.delete(data.resolve("t10k-labels-idx1-ubyte.gz"));
                    return List.of("--data", data.toString());
                }, ExampleCli.DATA, "--data {DIR}/train-only: no t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte there"),
                row("a truncated .gz", t -> {
                    Path data = t.dataSet("truncated");
                    Path file = data.resolve("train-images-idx3-ubyte.gz");
                    byte[] bytes = Files.readAllBytes(file);
                    Files.write(file, java.util.Arrays.copyOf(bytes, bytes.length / 2));
                    return List.of("--data", data.toString());
                }, ExampleCli.DATA, "{DIR}/truncated/train-images-idx3-ubyte.gz: the file ends early"),
                row("a .gz that is not gzip", t -> {
                    Path data = t.dataSet("not-gzip");
                    Files.writeString(data.resolve("train-labels-idx1-ubyte.gz"), "plain text");
                    return List.of("--data", data.toString());
                }, ExampleCli.DATA, "{DIR}/not-gzip/train-labels-idx1-ubyte.gz: not a valid gzip file"),
                row("image and label counts differ", t -> t.dataSetWith("counts", "t10k-labels-idx1-ubyte.gz",
                        IdxFileTest.idx(0x08, new int[] {3}, new byte[] {0, 1, 2})), ExampleCli.DATA,
                        "{DIR}/counts/t10k-images-idx3-ubyte.gz holds 2 images and "
                        + "{DIR}/counts/t10k-labels-idx1-ubyte.gz 3 labels: the counts must match"),
                row("a header that is not IDX", t -> t.dataSetWith("header", "t10k-images-idx3-ubyte.gz",
                        IdxFileTest.idx(0x0D, new int[] {2, 28, 28}, new byte[2 * 28 * 28 * 4])), ExampleCli.DATA,
                        "{DIR}/header/t10k-images-idx3-ubyte.gz: not an IDX file of unsigned bytes"),
                row("a label above 9", t -> t.dataSetWith("label", "train-labels-idx1-ubyte.gz",
                        IdxFileTest.idx(0x08, new int[] {3}, new byte[] {0, 1, 12})), ExampleCli.DATA,
                        "{DIR}/label/train-labels-idx1-ubyte.gz: label 2 is 12, labels must be 0 to 9"),
                row("--out under a file", t -> List.of("--data", t.dataSet("ok").toString(), "--out",
                        Files.writeString(t.dir.resolve("plain"), "x").resolve("run").toString()),
                        ExampleCli.DATA, "--out {DIR}/plain/run: cannot make the folder"),
                row("--out holds another run", t -> {
                    Path out = Files.createDirectories(t.dir.resolve("old-run"));
                    Files.writeString(out.resolve("fashion-mnist-mlp.png"), "x");
                    return List.of("--data", t.dataSet("ok2").toString(), "--out", out.toString());
                }, ExampleCli.USAGE, "--out {DIR}/old-run is not empty"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fashionMnistErrors")
    void fashionMnist_fileError_isOneLineNamingTheFile(String what, Breakage breakage, int exitCode,
                                                       List<String> expected) throws IOException {
        List<String> args = new ArrayList<>(breakage.apply(this));
        if (!args.contains("--out")) {
            args.addAll(List.of("--out", dir.resolve("run").toString()));
        }
        Outcome o = run(FashionMnist.commandLine(), args.toArray(String[]::new));
        assertEquals(exitCode, o.exitCode(), o.err());
        assertEquals(1, o.errLines().size(), "one line:\n" + o.err());
        for (String part : expected) {
            String line = part.replace("{DIR}", dir.toString());
            assertTrue(o.err().contains(line), "expected '" + line + "' in:\n" + o.err());
        }
        assertFalse(o.err().contains("\tat "), o.err());
        assertFalse(Files.exists(dir.resolve("run").resolve("epochs.csv")), "nothing trained");
    }

    @Test
    void fashionMnist_run_writesItsFilesToOneNewFolder_andTheDocsOnlyWhenAsked() throws IOException {
        Path data = dataSet("tiny");
        Path runs = dir.resolve("runs");
        Path docs = Files.createDirectories(dir.resolve("docs"));
        String[] common = {"--data", data.toString(), "--epochs", "1", "--batch", "1", "--threads", "1"};
        Outcome first = run(FashionMnist.commandLine(), concat(common, "--out", runs.resolve("a").toString()));
        assertEquals(0, first.exitCode(), first.err());
        assertEquals(List.of("epochs.csv", "fashion-mnist-mlp.png", "steps.csv", "summary.csv"),
                list(runs.resolve("a")));
        assertEquals(List.of(), list(docs), "a run leaves the docs alone");

        Outcome second = run(FashionMnist.commandLine(), concat(common, "--out", runs.resolve("b").toString(),
                "--docs", docs.toString()));
        assertEquals(0, second.exitCode(), second.err());
        assertEquals(List.of("data", "fashion-mnist-mlp.png"), list(docs));
        assertEquals(List.of("fashion-mnist-mlp-epochs.csv", "fashion-mnist-mlp-steps.csv",
                "fashion-mnist-mlp-summary.csv"), list(docs.resolve("data")));
    }

    @Test
    void runFolder_default_isNewEachTime_andAbsolute() {
        CommandLine cli = FashionMnist.commandLine();
        java.time.LocalDateTime now = java.time.LocalDateTime.of(2026, 11, 25, 13, 0, 0);
        String cwd = System.getProperty("user.dir");
        Path first = RunFolder.create(cli, null, "test-example", now);
        Path second = RunFolder.create(cli, null, "test-example", now);
        try {
            assertTrue(first.isAbsolute(), first.toString());
            assertEquals(Path.of(cwd, "target", "runs", "test-example-20261125-130000"), first);
            assertEquals(Path.of(cwd, "target", "runs", "test-example-20261125-130000-2"), second);
        } finally {
            first.toFile().delete();
            second.toFile().delete();
        }
    }

    static Stream<Arguments> tinyGptErrors() {
        return Stream.of(
                row("--data names nothing", t -> List.of("--data", t.dir.resolve("none.txt").toString()),
                        ExampleCli.DATA, "TinyGpt: --data {DIR}/none.txt: no such file or folder; it must be a text file"
                                + " or a folder of them"),
                row("--data is empty", t -> List.of("--data",
                        Files.writeString(t.dir.resolve("empty.txt"), "").toString()),
                        ExampleCli.DATA, "TinyGpt: --data {DIR}/empty.txt: holds no text"),
                row("--data is shorter than a context", t -> List.of("--data",
                        Files.writeString(t.dir.resolve("short.txt"), "a few words").toString()),
                        ExampleCli.DATA, "TinyGpt: --data {DIR}/short.txt: 11 characters are too few for --context 64:"
                                + " its last 10 % (the validation text) must hold more than 65"),
                row("--steps 0", t -> List.of("--steps", "0"), ExampleCli.USAGE,
                        "TinyGpt: --steps must be >= 1, got 0 (--help lists the options)"),
                row("--docs is no folder", t -> List.of("--docs", t.dir.resolve("nodocs").toString()),
                        ExampleCli.USAGE, "TinyGpt: --docs must be an existing folder, got {DIR}/nodocs (--help lists the"
                                + " options)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tinyGptErrors")
    void tinyGpt_error_isOneLine(String what, Breakage breakage, int exitCode, List<String> expected)
            throws IOException {
        List<String> args = new ArrayList<>(breakage.apply(this));
        args.addAll(List.of("--out", dir.resolve("run").toString()));
        Outcome o = run(ExampleCli.commandLine(new TinyGpt.Options()), args.toArray(String[]::new));
        assertEquals(exitCode, o.exitCode(), o.err());
        assertEquals(List.of(expected.get(0).replace("{DIR}", dir.toString())), o.errLines());
    }

    @Test
    void tinyGpt_run_writesCsvAndFigureToItsFolder() throws IOException {
        Path text = Files.writeString(dir.resolve("text.txt"), CharCorpus.EMBEDDED.repeat(20),
                StandardCharsets.UTF_8);
        Path out = dir.resolve("run");
        Outcome o = run(ExampleCli.commandLine(new TinyGpt.Options()), "--data", text.toString(), "--steps", "4",
                "--width", "16", "--layers", "1", "--heads", "2", "--context", "8", "--batch", "4",
                "--eval-every", "2", "--val-batches", "1", "--out", out.toString());
        assertEquals(0, o.exitCode(), o.err());
        assertEquals(List.of("tinygpt.csv", "tinygpt.png"), list(out));
    }

    private static String[] concat(String[] first, String... more) {
        return Stream.concat(Stream.of(first), Stream.of(more)).toArray(String[]::new);
    }

    private static List<String> list(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.map(f -> f.getFileName().toString()).sorted().toList();
        }
    }
}
