package dev.muon.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The kernel's counters a step is measured against: parsed from their lines, and read while a thread spins. */
class StolenTimeTest {
    @Test
    void steal_isTheEighthCounterOfTheAllCpuLine_inTicksOfTenMs() {
        assertEquals(63870, StolenTime.steal("cpu  3747966 107080 417787 1474062 6951 0 6674 6387 0 0"), 0);
    }

    @Test
    void runQueueWait_isTheSecondSchedstatField() {
        assertEquals(127785, StolenTime.runQueueWaitNs("0 127785 1\n"), 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"cpu0 1 2 3 4 5 6 7 8 9", "cpu 1 2 3 4 5 6 7"})
    void steal_refusesAnotherLine(String line) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> StolenTime.steal(line));
        assertTrue(e.getMessage().contains(line), e.getMessage());
    }

    @Test
    void minorFaults_isTheTenthStatField_afterANameWithSpacesAndParentheses() {
        assertEquals(4321, StolenTime.minorFaults("77 (a (b) c) S 1 77 77 0 -1 4194560 4321 0 0 0 5 3 0 0 20 0"), 0);
        assertThrows(IllegalArgumentException.class, () -> StolenTime.minorFaults("77 (java) S 1 2"));
    }

    @Test
    void runQueueWait_refusesALineOfTwoFields() {
        assertThrows(IllegalArgumentException.class, () -> StolenTime.runQueueWaitNs("1 2"));
    }

    @Test
    void now_readsBothCounters_andStealNeverShrinks() {
        StolenTime before = StolenTime.now();
        long end = System.nanoTime() + 50_000_000L;
        long spin = 0;
        while (System.nanoTime() < end) {
            spin++;
        }
        StolenTime lost = StolenTime.now().since(before);
        assertTrue(spin > 0);
        // The wait is a sum over live threads, and the JIT's compiler threads may end in between: only finite.
        assertTrue(lost.stealMs() >= 0 && Double.isFinite(lost.runQueueWaitMs()), lost.toString());
        byte[] touched = new byte[64 << 20];
        for (int i = 0; i < touched.length; i += 4096) {
            touched[i] = 1;
        }
        assertTrue(StolenTime.now().since(before).minorFaults() > 0, "64 MiB touched without a page fault");
    }
}
