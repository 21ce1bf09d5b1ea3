package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.state.CheckpointFile;
import dev.muon.state.OptimizerState;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * How both optimizers put a checkpoint on disk and take one back, alone or over a process group: a single process
 * writes and reads the file itself; distributed, rank 0 writes and every rank learns whether it succeeded, and on a
 * read every rank reads the file and the ranks agree that they read the same content (its step and SHA-256)
 * before any of them goes on. Values in, values out: the optimizers restore.
 */
final class StateFiles {
    private StateFiles() {
    }

    /**
     * Writes a checkpoint. Distributed, a collective: rank 0 writes {@code state} (complete on rank 0, see
     * {@link MuonStateTransfer#momentumForCheckpoint}), then every rank learns whether the write succeeded.
     *
     * @param path  the target
     * @param state what to write
     * @param group the process group, or null for a single process
     * @throws UncheckedIOException on every rank if the file could not be written; {@code path} is then unchanged
     */
    static void save(Path path, OptimizerState state, DistributedGroup group) {
        if (group == null) {
            CheckpointFile.write(path, state);
            return;
        }
        RuntimeException failure = null;
        if (group.rank() == 0) {
            try {
                CheckpointFile.write(path, state);
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        // Only rank 0 writes, so the sum is rank 0's status.
        long[] failed = group.allReduceSum(new long[]{failure == null ? 0 : 1}, "the checkpoint's save status");
        if (failure != null) {
            throw failure;
        }
        if (failed[0] != 0) {
            throw new UncheckedIOException(new IOException("rank 0 could not write checkpoint " + path
                    + " (see rank 0's error); the previous file, if any, is intact"));
        }
    }

    /**
     * Reads a checkpoint. Distributed, a collective: every rank reads, and a rank that fails, or that read other
     * content (another copy, another step), fails every rank before any of them changes anything.
     *
     * @param path          the checkpoint
     * @param group         the process group, or null for a single process
     * @param beforeTensors checks the state the file describes before any of its tensors is allocated
     *                      ({@link CheckpointFile#read(Path, java.util.function.Consumer)}): the optimizer's fit
     * @return the state it holds
     * @throws dev.muon.state.StateFileException     if the file is malformed
     * @throws dev.muon.state.StateMismatchException what {@code beforeTensors} throws
     * @throws IllegalStateException                 distributed, on every rank if any rank's read fails or the
     *                                               ranks read different content
     */
    static OptimizerState load(Path path, DistributedGroup group, Consumer<OptimizerState> beforeTensors) {
        if (group == null) {
            return CheckpointFile.read(path, beforeTensors);
        }
        return group.agree("the step and content of checkpoint " + path,
                () -> CheckpointFile.read(path, beforeTensors),
                read -> "step=" + read.step() + " sha256=" + CheckpointFile.sha256(path));
    }
}
