package dev.muon.bench;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The idle-spin probe measures CPU time, so work that keeps the CPU busy during the sleep must show up. */
class IdleSpinTest {
    @Test
    void cpuBurntByAnotherThreadDuringTheSleep_isCounted() throws InterruptedException {
        double burnt = IdleSpin.idleCpuMsAfter(() -> {
            // Until it has had 30 ms of CPU itself, however long a loaded machine makes that take: between the rounds
            // there is no time to speak of, so nearly all of it falls into the measured sleeps.
            Thread spinner = new Thread(() -> {
                ThreadMXBean threads = ManagementFactory.getThreadMXBean();
                while (threads.getCurrentThreadCpuTime() < 30_000_000L) {
                    Thread.onSpinWait();
                }
            });
            spinner.setDaemon(true);
            spinner.start();
        });
        assertTrue(burnt > 10, "mean CPU ms burnt during the sleeps: " + burnt);
    }
}
