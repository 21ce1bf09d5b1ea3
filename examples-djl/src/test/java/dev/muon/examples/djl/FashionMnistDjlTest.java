package dev.muon.examples.djl;

import ai.djl.ndarray.NDManager;
import dev.muon.djl.MuonAdamW;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The example end to end on a small generated stand-in of the IDX files, and its refusal of a missing data set. */
class FashionMnistDjlTest {
    private static final Pattern ROW = Pattern.compile("(DJL Adam|muon-djl MuonAdamW)\\s+([0-9.]+) %\\s+([0-9.]+)");

    @Test
    void bothOptimizers_train_andTheirAccuracyAndSecondsArePrintedSideBySide(@TempDir Path dir) throws IOException {
        SyntheticFashionMnist.write(dir, 640, 200);
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream out = System.out;
        // MuonAdamW logs its assignment table once (SLF4J, which this module binds to java.util.logging); the example
        // does not print it again.
        java.util.logging.Logger assignmentLog = java.util.logging.Logger.getLogger(MuonAdamW.class.getName());
        List<String> logged = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                logged.add(record.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        assignmentLog.addHandler(capture);
        int code;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            code = new CommandLine(new FashionMnistDjl()).execute("--data", dir.toString(), "--epochs", "2",
                    "--batch", "32");
        } finally {
            System.setOut(out);
            assignmentLog.removeHandler(capture);
        }
        String text = captured.toString(StandardCharsets.UTF_8);
        String log = String.join("\n", logged);
        assertEquals(0, code, text);
        assertTrue(text.contains("(640 train, 200 test)"), text);
        assertTrue(log.contains("02Linear_weight  [128, 784]  float32   muon"), log);
        assertTrue(log.contains("06Linear_weight  [10, 64]    float32   adamw   0.001000            5120  "
                + "output layer (last matrix)"), log);
        assertFalse(text.contains("02Linear_weight"), "the table is logged, not printed a second time:\n" + text);
        Matcher m = ROW.matcher(text);
        int rows = 0;
        while (m.find()) {
            rows++;
            double accuracy = Double.parseDouble(m.group(2));
            assertTrue(accuracy > 60, m.group(1) + " learns the stand-in: " + accuracy + " %\n" + text);
            // Printed to a tenth of a second: 640 images train in less than that on a quiet machine.
            assertTrue(Double.parseDouble(m.group(3)) >= 0, text);
        }
        assertEquals(2, rows, text);
    }

    static Stream<Arguments> badFiles() {
        return Stream.of(
                Arguments.of("10x10 images", 10, 5, 5,
                        "images must be 28x28, got IdxFile[5, 10, 10]"),
                Arguments.of("fewer labels than images", 28, 5, 4,
                        "one label per image expected, got IdxFile[5, 28, 28] and IdxFile[4]"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badFiles")
    void filesOfAnotherShape_areRefused(String label, int side, int images, int labels, String message,
                                        @TempDir Path dir) throws IOException {
        SyntheticFashionMnist.write(dir, 8, 8);
        SyntheticFashionMnist.idx(dir.resolve("train-images-idx3-ubyte.gz"), new byte[images * side * side], images,
                side, side);
        SyntheticFashionMnist.idx(dir.resolve("train-labels-idx1-ubyte.gz"), new byte[labels], labels);
        try (NDManager manager = NDManager.newBaseManager()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> FashionMnistDatasets.load(manager, dir, 0, 32), label);
            assertEquals(message, e.getMessage(), label);
        }
    }

    @Test
    void aFolderWithoutTheFiles_isRefused_sayingHowToGetThem(@TempDir Path dir) {
        try (NDManager manager = NDManager.newBaseManager()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> FashionMnistDatasets.load(manager, dir, 0, 32));
            assertEquals("no train-images-idx3-ubyte[.gz] in " + dir + ": install Debian's dataset-fashion-mnist "
                    + "(apt-get install dataset-fashion-mnist) or pass --data DIR", e.getMessage());
        }
    }
}
