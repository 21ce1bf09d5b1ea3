package dev.muon.orthogonalize;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** With adaptive threads on, OpenBLAS gives up the cores other processes keep busy, and only those. */
class CpuContentionTest {
    @ParameterizedTest(name = "{0} wanted, {1} cores, {2} busy elsewhere -> {3}")
    @CsvSource({"2,2,0,2", "2,2,1,1", "2,2,7,1", "8,16,4,8", "8,8,3,5", "1,2,1,1", "4,2,0,2", "2,2,-1,2"})
    void threadsLeft_areTheFreeCores_boundedByWhatWasAsked(int wanted, int cores, int busy, int expected) {
        assertEquals(expected, CpuContention.threadsLeft(wanted, cores, busy));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = ';', value = {"0;0", "0 0 1 0 0;0", "1 1 0 1 1;1", "0 1;1", "3 0 2;2", "1 0 1 0 0;0"})
    void oneSampleOffEitherWay_doesNotDecide(String samples, int expected) {
        int[] counts = java.util.Arrays.stream(samples.split(" ")).mapToInt(Integer::parseInt).toArray();
        assertEquals(expected, CpuContention.median(counts));
    }

    @ParameterizedTest(name = "{0}, own {1} -> {2}")
    @CsvSource(delimiter = ';', value = {"0.45 1.39 2.12 3/78 12900;2;1", "0.45 1.39 2.12 1/78 12900;2;0",
            "  4.00 3.00 2.00 12/300 5  ;2;10", "0.1 0.1 0.1 1/50 7;3;0"})
    void othersRunnable_isTheMachinesRunnableCountLessOurs(String line, int own, int expected) {
        assertEquals(expected, CpuContention.othersRunnable(line, own));
    }

    @Test
    void adaptiveThreads_areOffByDefault_soThatTheThreadCountStaysTheUsers() {
        assertEquals(Boolean.getBoolean(CpuContention.ENABLE_PROPERTY) && CpuContention.PROC_READABLE,
                CpuContention.ENABLED);
        if (!CpuContention.ENABLED) {
            assertEquals(2, CpuContention.threadsFor(2));
            assertEquals(7, CpuContention.threadsFor(7));
        }
    }

    @Test
    void loadavgLine_withoutTheRunningField_isRejectedNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CpuContention.othersRunnable("0.45 1.39 2.12", 1));
        assertEquals("loadavg line has no running/total field: '0.45 1.39 2.12'", e.getMessage());
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = ';', value = {"1234 (java) R 1 1234 0;true", "1235 (C2 CompilerThre) S 1 2;false",
            "99 (evil) R (x) S 1;false", "7 (a b) R 0;true", "garbage;false"})
    void runnableThreads_areReadFromTheStateAfterTheName(String stat, boolean runnable) {
        assertEquals(runnable, CpuContention.isRunnable(stat));
    }

    @Test
    void aSpinningProcess_isSeenAsBusyElsewhere() throws Exception {
        assumeTrue(CpuContention.PROC_READABLE, "needs Linux's /proc");
        Process spinner = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
        try {
            // The two files are read at slightly different instants, so our own threads (the JIT compilers, say)
            // can be counted as running when the machine-wide count no longer has them: the most of a few samples.
            int most = 0;
            for (int sample = 0; sample < 10; sample++) {
                Thread.sleep(50);
                most = Math.max(most, CpuContention.othersNow().orElseThrow());
            }
            assertTrue(most >= 1, "the spinning shell is runnable, but at most " + most + " others were seen");
        } finally {
            spinner.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
        assertFalse(spinner.isAlive());
    }
}
