package dev.muon.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** FashionMnist's command line: real arguments, {@code --help}, and bad values refused before any training. */
class FashionMnistCommandTest {
    private record Outcome(int exitCode, String out, String err) {
    }

    private static Outcome run(String... args) {
        CommandLine cli = FashionMnist.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        PrintWriter outWriter = new PrintWriter(out);
        PrintWriter errWriter = new PrintWriter(err);
        cli.setOut(outWriter);
        cli.setErr(errWriter);
        int code = cli.execute(args);
        outWriter.flush();
        errWriter.flush();
        return new Outcome(code, out.toString(), err.toString());
    }

    @Test
    void help_listsEveryOption_andTrainsNothing() {
        Outcome o = run("--help");
        assertEquals(0, o.exitCode());
        for (String option : List.of("--data", "--out", "--epochs", "--train-size", "--batch", "--lr",
                "--lr-multipliers", "--weight-decay", "--seed", "--seeds", "--models", "--threads", "--docs",
                "--debug", "--version")) {
            assertTrue(o.out().contains(option), "--help does not list " + option + ":\n" + o.out());
        }
    }

    @Test
    void defaults_areTheReadmesMainJob() {
        FashionMnist command = new FashionMnist();
        new CommandLine(command).parseArgs();
        assertEquals(3, command.epochs);
        assertEquals(0, command.trainSize, "the full training set");
        assertEquals(1, command.seeds);
        assertEquals(List.of(1.0), command.lrMultipliers);
        assertEquals(List.of("mlp"), command.models);
        assertEquals(2, command.threads);
    }

    @Test
    void separateArguments_areParsedAsSuch() {
        FashionMnist command = new FashionMnist();
        new CommandLine(command).parseArgs("--models", "mlp,cnn", "--epochs", "5", "--lr-multipliers", "1,2,4");
        assertEquals(List.of("mlp", "cnn"), command.models);
        assertEquals(5, command.epochs);
        assertEquals(List.of(1.0, 2.0, 4.0), command.lrMultipliers);
    }

    static Stream<Arguments> badArguments() {
        return Stream.of(
                Arguments.of(List.of("--epochs", "0"), "--epochs must be >= 1, got 0"),
                Arguments.of(List.of("--batch", "0"), "--batch must be >= 1, got 0"),
                Arguments.of(List.of("--seeds", "0"), "--seeds must be >= 1, got 0"),
                Arguments.of(List.of("--threads", "0"), "--threads must be >= 1, got 0"),
                Arguments.of(List.of("--train-size", "-1"), "--train-size must be >= 0, got -1"),
                Arguments.of(List.of("--lr", "0"), "--lr must be > 0, got 0.0"),
                Arguments.of(List.of("--weight-decay", "-0.1"), "--weight-decay must be >= 0, got -0.1"),
                Arguments.of(List.of("--lr-multipliers", "1,0"), "--lr-multipliers must all be > 0, got 0.0"),
                Arguments.of(List.of("--models", "mlp,rnn"), "--models takes mlp and/or cnn, got rnn"),
                Arguments.of(List.of("--epochs", "three"), "'three' is not an int"),
                Arguments.of(List.of("--epoch", "3"), "Unknown options: '--epoch'"));
    }

    @ParameterizedTest
    @MethodSource("badArguments")
    void badArgument_isRejected_namingTheOption_andWritesNothing(List<String> args, String message,
                                                                  @TempDir Path dir) throws Exception {
        Path out = dir.resolve("out");
        String[] all = Stream.concat(args.stream(), Stream.of("--out", out.toString())).toArray(String[]::new);
        Outcome o = run(all);
        assertEquals(2, o.exitCode(), o.err());
        assertTrue(o.err().contains(message), "expected '" + message + "' in:\n" + o.err());
        assertFalse(Files.exists(out), "a refused command line must not create " + out);
    }
}
