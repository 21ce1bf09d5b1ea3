package dev.muon.cuda;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/** {@link GpuProbe} where there is no GPU: one clean "unavailable" line with the cause, and exit status 2. */
class GpuProbeTest {

    @Test
    void withoutAGpu_reportsUnavailableWithTheCause_andExitStatus2() {
        assumeFalse(CudaSupport.isAvailable(), "a GPU is here: GpuProbe runs its GPU checks instead");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int status = GpuProbe.run(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        System.out.print(out);

        assertEquals(GpuProbe.NO_GPU, status, out);
        assertTrue(out.contains("probe: gpu=unavailable cause=" + CudaSupport.unavailabilityCause().getMessage()), out);
        assertTrue(out.contains("probe: java="), out);
        assertTrue(out.contains("probe: mapped="), "the libtorch files this JVM mapped: " + out);
    }
}
