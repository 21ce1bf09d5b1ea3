package dev.muon.examples.study;

import dev.muon.examples.DataError;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The second study's timing pass at {@link SecondStudyTest#TINY}'s size: the blocks' order (rotated
 * configurations, alternating thread counts), the rows read back from the latest pass only, the thread pools left
 * at one thread, the arms it refuses to time before they are tuned, and the step cost's delta-method interval.
 */
class SecondTimingTest {
    @TempDir
    Path dir;

    @Test
    void run_rotatesTheConfigurations_alternatesTheThreadCounts_andReadsBackTheLatestPass() throws IOException {
        Path gcide = TinyDictionary.write(dir, "gcide", 300);
        SecondData data = SecondData.of("gcide", GcideCorpus.load(gcide, null, "--gcide"), gcide, "--gcide",
                SecondStudyTest.TINY);
        List<SecondCell> configs = List.of(SecondStudyTest.cell(SecondArm.ADAMW, 1000, 1),
                SecondStudyTest.cell(SecondArm.MUON, 1000, 1), SecondStudyTest.cell(SecondArm.AOL, 1000, 1));
        Path csv = dir.resolve(SecondTiming.FILE);
        StringWriter log = new StringWriter();
        Files.writeString(csv, String.join(",", SecondTiming.HEADER) + "\n"
                + "2000-01-01T00:00:00Z,muon,1,1,1,2,1.0,500.000,500.000,0.10,0.10,cpu,abc\n");
        SecondTiming.run(data, configs, SecondStudyTest.TINY, 3, 2, 1, csv, new PrintWriter(log, true));

        assertEquals(SecondStudy.THREADS, torch.get_num_threads(), "the pass leaves the sweep's one thread");
        List<String> lines = Files.readAllLines(csv);
        assertEquals(2 + 3 * 2 * 3, lines.size(), "the old pass, then 3 rounds x 2 thread counts x 3 configurations");
        List<SecondTiming.Round> rounds = SecondTiming.read(csv);
        assertEquals(18, rounds.size(), "the latest pass only");
        int[] threads = rounds.stream().mapToInt(SecondTiming.Round::threads).toArray();
        assertArrayEquals(new int[] {1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 2, 2, 2}, threads);
        List<SecondArm> arms = rounds.stream().map(SecondTiming.Round::arm).toList();
        assertEquals(List.of(SecondArm.ADAMW, SecondArm.MUON, SecondArm.AOL), arms.subList(0, 3));
        assertEquals(List.of(SecondArm.MUON, SecondArm.AOL, SecondArm.ADAMW), arms.subList(6, 9), "rotated by one");
        assertTrue(rounds.stream().allMatch(r -> r.ms() > 0 && r.cpuMs() > 0), rounds.toString());

        Map<Integer, Map<SecondArm, double[]>> times = SecondTiming.times(rounds);
        assertEquals(List.of(1, 2), List.copyOf(times.keySet()));
        assertEquals(3, times.get(2).get(SecondArm.AOL).length);
        assertTrue(java.util.Arrays.stream(times.get(1).get(SecondArm.MUON)).allMatch(v -> v > 0));
        String md = SecondAnalysis.markdown(List.of(), rounds);
        assertTrue(md.contains("Seconds: pending a whole timing pass; the latest (" + rounds.get(0).pass()
                + ") has 18 of its " + SecondTiming.blocks() + " blocks."), md);
        assertFalse(md.contains("## Step cost"), md);
    }

    /** A whole pass, made up: every arm at both thread counts in every round, AOL 10 % above MuonAdamW. */
    private static List<SecondTiming.Round> wholePass(int rounds) {
        List<SecondTiming.Round> out = new java.util.ArrayList<>();
        for (int r = 1; r <= rounds; r++) {
            for (int threads : SecondTiming.THREADS) {
                for (SecondArm a : SecondArm.values()) {
                    double ms = (a == SecondArm.AOL ? 110 : 100) / threads + (r % 3);
                    // One block at one thread waits 1 % of its wall time off the CPU.
                    double cpu = a == SecondArm.ADAMW && r == 2 && threads == 1 ? 0.99 * ms : ms;
                    out.add(new SecondTiming.Round("2026-11-30T00:00:00Z", a, threads, r, ms, cpu, 0.1 * r,
                            0.1 * r + 0.05));
                }
            }
        }
        return out;
    }

    @Test
    void analysis_ofAWholePass_reportsTheConditions_andEachTimeWithItsInterval() {
        List<SecondTiming.Round> rounds = wholePass(SecondTiming.ROUNDS);
        assertEquals(SecondTiming.blocks(), SecondTiming.finished(rounds));
        String md = SecondAnalysis.markdown(List.of(), rounds);
        int oneThread = SecondArm.values().length * SecondTiming.ROUNDS;
        assertTrue(md.contains("Timing pass 2026-11-30T00:00:00Z: load average 0.10–1.05 over its blocks; at one "
                + "thread the thread's CPU time was within 0.1 % of the wall time in " + (oneThread - 1) + " of "
                + oneThread + " blocks (at most 1.00 % apart)."), md);
        double[] aol = new double[SecondTiming.ROUNDS];
        for (int r = 1; r <= SecondTiming.ROUNDS; r++) {
            aol[r - 1] = 110 + (r % 3);
        }
        StudyStats.Interval ms = StudyStats.interval(aol);
        assertTrue(md.contains(String.format(java.util.Locale.ROOT, "| AOL | %.2f (%.2f–%.2f) | ", ms.mean(),
                ms.low(), ms.high())), md);
        assertTrue(md.contains("## Step cost at 2 threads, against MuonAdamW"), md);

        // A round short of whole: the seconds wait, rather than a mean over what is there.
        List<SecondTiming.Round> short1 = rounds.stream().filter(r -> !(r.round() == 4 && r.threads() == 2
                && r.arm() == SecondArm.MUOWN)).toList();
        assertEquals(SecondTiming.blocks() - 1, SecondTiming.finished(short1));
        String pending = SecondAnalysis.markdown(List.of(), short1);
        assertTrue(pending.contains("has " + (SecondTiming.blocks() - 1) + " of its"), pending);
        assertFalse(pending.contains("## Step cost"), pending);
    }

    @Test
    void configurations_refuseArmsNotTunedYet_namingThem() {
        Map<SecondArm, SecondCell> tuned = new EnumMap<>(SecondArm.class);
        for (SecondArm a : SecondArm.values()) {
            tuned.put(a, SecondStudyTest.cell(a, 1000, 0));
        }
        assertEquals(SecondArm.values().length, SecondTiming.configurations(tuned).size());
        assertTrue(SecondTiming.configurations(tuned).stream().allMatch(c -> c.seed() == 1));
        tuned.remove(SecondArm.HYPERBALL);
        tuned.remove(SecondArm.AOL);
        DataError e = assertThrows(DataError.class, () -> SecondTiming.configurations(tuned));
        assertTrue(e.getMessage().endsWith("not tuned yet: [hyperball, aol]"), e.getMessage());
    }

    @Test
    void cost_againstAConstantBaseline_isTheMeansTIntervalOverTheBaseline() {
        double[] x = {110, 118, 121, 105, 114};
        double[] y = {100, 100, 100, 100, 100};
        SecondTiming.Cost c = SecondTiming.cost(SecondArm.AOL, 1, x, y);
        StudyStats.Interval mean = StudyStats.interval(x);
        assertEquals(mean.mean() / 100, c.ratio(), 1e-12);
        assertEquals(mean.low() / 100, c.low(), 1e-12);
        assertEquals(mean.high() / 100, c.high(), 1e-12);
    }

    @Test
    void cost_ofRoundsThatMoveTogether_isNarrowerThanOfIndependentOnes() {
        double[] y = {100, 120, 90, 110, 105};
        double[] together = java.util.Arrays.stream(y).map(v -> 1.2 * v).toArray();
        SecondTiming.Cost c = SecondTiming.cost(SecondArm.AOL, 1, together, y);
        assertEquals(1.2, c.ratio(), 1e-12);
        assertEquals(1.2, c.low(), 1e-9, "a fixed ratio every round has no spread");
        assertEquals(1.2, c.high(), 1e-9);
    }
}
