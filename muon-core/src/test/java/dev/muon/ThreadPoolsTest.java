package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.OpenBlasThreadsProbe;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One thread budget for both CPU pools, and the one warning about OpenMP's spinning threads. */
@ExtendWith(NativeScopePerTest.class)
class ThreadPoolsTest {
    @Test
    void openBlasThreads_followLibtorchsIntraOpThreads() {
        int original = torch.get_num_threads();
        // Other processes on a shared machine would take threads away (CpuContentionTest covers that).
        OpenBlasThreadsProbe.pauseContentionSampling(true);
        try {
            // 512x1024 float64 runs the Gram kernel on OpenBLAS (float32 may run it on the native kernels, which
            // set OpenBLAS's pool all the same).
            NewtonSchulz ns = new NewtonSchulz(NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.FLOAT64));
            for (int threads : new int[]{1, 2, 1}) {
                torch.set_num_threads(threads);
                ns.orthogonalize(torch.randn(512, 1024));
                assertEquals(threads, OpenBlasThreadsProbe.openBlasThreads(), "after set_num_threads(" + threads
                        + ")");
            }
        } finally {
            torch.set_num_threads(original);
            OpenBlasThreadsProbe.pauseContentionSampling(false);
        }
    }

    @ParameterizedTest(name = "OMP_WAIT_POLICY={0}")
    @CsvSource(value = {"PASSIVE,false", "passive,false", " Passive ,false", "ACTIVE,true", "NULL,true", "'',true"},
            nullValues = "NULL")
    void warning_unlessPassive(String policy, boolean warns) {
        assertEquals(warns, ThreadPoolAdvice.forWaitPolicy(policy).isPresent());
        ThreadPoolAdvice.forWaitPolicy(policy).ifPresent(w -> {
            assertTrue(w.startsWith("OMP_WAIT_POLICY is " + (policy == null ? "not set" : "'" + policy + "'")), w);
            assertTrue(w.endsWith("Start the JVM with OMP_WAIT_POLICY=PASSIVE in its environment (Getting started, "
                    + "'Threads on CPUs')."), w);
            // A jar user has no docs/ folder: the message names a section, not a path (issue 30, item 9).
            assertFalse(w.contains(".md"), w);
        });
    }

    @ParameterizedTest(name = "OPENBLAS_THREAD_TIMEOUT={0}")
    @CsvSource(value = {"4,false", "1,false", " 12 ,false", "0,true", "-3,true", "13,true", "28,true", "NULL,true",
            "'',true", "four,true"},
            nullValues = "NULL")
    void openBlasWarning_unlessTheSpinIsShort(String timeout, boolean warns) {
        assertEquals(warns, ThreadPoolAdvice.forOpenBlasTimeout(timeout).isPresent());
        ThreadPoolAdvice.forOpenBlasTimeout(timeout).ifPresent(w -> {
            assertTrue(w.startsWith("OPENBLAS_THREAD_TIMEOUT is " + (timeout == null ? "not set" : "'" + timeout
                    + "'")), w);
            assertTrue(w.endsWith("Start the JVM with OPENBLAS_THREAD_TIMEOUT=4 in its environment (Getting started, "
                    + "'Threads on CPUs')."), w);
            assertFalse(w.contains(".md"), w);
        });
    }
}
