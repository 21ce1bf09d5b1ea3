package dev.muon.cuda;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/** {@link GpuTimings} where there is no GPU: the cause on one line, exit status 2, no file written. */
class GpuTimingsTest {

    @Test
    void withoutAGpu_reportsUnavailable_andWritesNothing(@TempDir Path dir) throws Exception {
        assumeFalse(CudaSupport.isAvailable(), "a GPU is here: GpuTimings measures instead");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int status = GpuTimings.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), 3, dir.toString());
        String out = bytes.toString(StandardCharsets.UTF_8);
        System.out.print(out);

        assertEquals(GpuProbe.NO_GPU, status, out);
        assertTrue(out.startsWith("timings: gpu=unavailable cause="), out);
        assertFalse(Files.exists(dir.resolve("timings.json")));
    }
}
