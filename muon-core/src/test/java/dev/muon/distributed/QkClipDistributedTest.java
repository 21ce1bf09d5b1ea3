package dev.muon.distributed;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * QK-Clip across two ranks over Gloo ({@link QkClipWorker}): each rank reports a different head over {@code τ},
 * and every rank must rescale by the maximum of all reports, ending bit for bit where the single-process optimizer
 * told that maximum ends, for {@code Muon} and {@code MuonAdamW}.
 */
class QkClipDistributedTest {
    private static final int WORLD = 2;

    @TempDir
    Path dir;

    @Test
    void ranksAgreeOnTheMaximumOfTheirReports_andMatchTheSingleProcessRun() throws Exception {
        int[] codes = WorkerLauncher.run("qkclip", WORLD, dir, 60_000, 240, List.of(0, 1));
        assertArrayEquals(new int[]{0, 0}, codes, () -> logs());
        try (PointerScope scope = new PointerScope()) {
            for (String kind : List.of("muon", "hybrid")) {
                Map<String, Tensor> reference = read(kind + "-reference.pt");
                Map<String, Tensor> unclipped = read(kind + "-unclipped.pt");
                assertFalse(reference.get("attn.q").equal(unclipped.get("attn.q")),
                        kind + ": the clip changed nothing, so the test would prove nothing");
                for (int rank = 0; rank < WORLD; rank++) {
                    Map<String, Tensor> mine = read(kind + "-rank" + rank + ".pt");
                    for (String name : QkClipWorker.NAMES) {
                        int r = rank;
                        assertTrue(reference.get(name).equal(mine.get(name)), () -> kind + " rank " + r + ": '"
                                + name + "' differs from the single-process run told every rank's reports by "
                                + reference.get(name).sub(mine.get(name)).abs().max().item_double());
                    }
                }
            }
        }
    }

    private Map<String, Tensor> read(String file) {
        return TensorFiles.read(dir.resolve(file), QkClipWorker.NAMES);
    }

    private String logs() {
        try {
            return WorkerLauncher.logs(dir, "qkclip", WORLD);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
