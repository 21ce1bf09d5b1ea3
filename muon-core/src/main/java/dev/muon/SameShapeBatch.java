package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;

/**
 * The parameters of one {@link Muon} group that share a matrix shape, dtype, device, orthogonalizer and fused
 * update stages, and that the batching rule ({@link #allows}, documented for users at {@link Muon#BATCH_MAX_SIDE})
 * lets run their Newton–Schulz iterations as one batch; and the stacked buffer {@code [members, rows, cols]} their
 * updates are written into, created at the first batched step and reused. The stack has the members' dtype, or,
 * when they have fused stages ({@link ParameterState#fusedKernels}), the update dtype those stages write
 * ({@code nsPrecision}), so that the fused momentum writes each {@code U} into its slice.
 */
final class SameShapeBatch {
    /**
     * The largest {@code max(rows, cols)} that batches, except in bfloat16 on a CPU. 512 is the bound the batching
     * issue proposed, not a measured crossover; {@code MuonStepBenchmark -p model=small-24x256 -p batching=on,off}
     * measures the 256×256 case (see {@code docs/benchmarks.md}).
     */
    static final int MAX_SIDE = 512;

    /**
     * The largest {@code max(rows, cols)} that batches in bfloat16 on a CPU: measured up to 1280² (where a batch
     * still beat the matrices one by one) and no further, since from 1536 rows {@code AUTO} gives square matrices
     * the symmetric kernel, which a batch would cost them. bfloat16 products go to oneDNN, whose batched product
     * runs whole matrices per thread instead of splitting each matrix across threads. Where muon-core's native
     * half product runs, {@code AUTO} gives squares the symmetric kernel from 512 rows, and {@link #allows} keeps
     * them out of batches from there.
     */
    static final int BFLOAT16_CPU_MAX_SIDE = 1280;

    /**
     * The most matrix elements one batch holds ({@code members × rows × cols}); more members of one shape are
     * split into batches of equal size (within one), which share their workspaces. It bounds the workspaces
     * (five Newton–Schulz buffers of {@code [members, rows, cols]}): 2^23 elements is 84 MB in bfloat16, 14
     * matrices of 768², 5 of 1280², 32 of 512². (The stack, one update-sized slice per member, is per batch.)
     */
    static final long MAX_ELEMENTS = 1L << 23;

    /** The fewest parameters of one shape, updated by this process in a step, that run as a batch. */
    static final int MIN_PARAMETERS = 2;

    /** The members in group order. */
    final List<ParameterState> members;
    /** Each member's position in the optimizer's parameter order: its gradient and its owner in the shard plan. */
    final int[] positions;
    /** Reused every step: the positions of the members that have a gradient this step, and those gradients. */
    final int[] activePositions;
    final Tensor[] activeGrads;
    private final ScalarType stackType;
    private Tensor stack;

    private SameShapeBatch(List<ParameterState> members, int[] positions, ScalarType stackType) {
        this.members = List.copyOf(members);
        this.positions = positions;
        this.stackType = stackType;
        this.activePositions = new int[positions.length];
        this.activeGrads = new Tensor[positions.length];
    }

    /**
     * Partitions a group's parameters into same-shape batches under {@link #allows}; parameters left
     * out take the per-parameter path.
     *
     * @param states the group's parameters
     * @param first  the position of the group's first parameter in the optimizer's order
     * @param config the group's configuration
     * @param mine   whether this process updates the parameter at a position (distributed: whether it owns it)
     * @return the batches, in the order of their first members
     */
    static List<SameShapeBatch> plan(List<ParameterState> states, int first, MuonConfig config, IntPredicate mine) {
        Map<Key, List<Integer>> byKey = new LinkedHashMap<>();
        for (int j = 0; j < states.size(); j++) {
            ParameterState state = states.get(j);
            // A stacked 3-D parameter is a batch already, and a parameter split in row blocks batches its own
            // blocks; neither is merged with others.
            // A parameter with no elements has nothing to orthogonalize.
            if (state.layout.batch() != 0 || state.rowBlocks != null || state.matrix.numel() == 0
                    || !mine.test(first + j)) {
                continue;
            }
            byKey.computeIfAbsent(Key.of(state), k -> new ArrayList<>()).add(j);
        }
        List<SameShapeBatch> batches = new ArrayList<>();
        for (List<Integer> indices : byKey.values()) {
            ParameterState head = states.get(indices.get(0));
            if (!allows(config, head.layout.rows(), head.layout.cols(), indices.size(),
                    head.matrix.device().is_cpu())) {
                continue;
            }
            List<ParameterState> members = new ArrayList<>();
            int[] positions = new int[indices.size()];
            for (int k = 0; k < positions.length; k++) {
                members.add(states.get(indices.get(k)));
                positions[k] = first + indices.get(k);
            }
            // Muown's U is its float32 (float64) momentum whatever the parameter's dtype: the stack keeps it so.
            UpdateRecipe.Momentum momentum = UpdateRecipe.of(config).momentum();
            ScalarType stackType = head.fusedKernels != null ? config.nsPrecision().scalarType()
                    : momentum == UpdateRecipe.Momentum.MUOWN_DIRECTION
                    ? ParameterState.dtypeOf(momentum.buffer(), head.param) : head.matrix.scalar_type();
            for (int[] chunk : chunks(indices.size(), head.layout.rows() * head.layout.cols())) {
                if (chunk[1] < MIN_PARAMETERS) {
                    continue;
                }
                batches.add(new SameShapeBatch(members.subList(chunk[0], chunk[0] + chunk[1]),
                        Arrays.copyOfRange(positions, chunk[0], chunk[0] + chunk[1]), stackType));
            }
        }
        return batches;
    }

    /**
     * Splits {@code count} same-shape matrices of {@code elements} each into as few batches as
     * {@link #MAX_ELEMENTS} allows, of sizes differing by at most one (so that they mostly share one workspace
     * shape); each entry is {@code {first, size}}.
     */
    static List<int[]> chunks(int count, long elements) {
        int perBatch = (int) Math.max(MIN_PARAMETERS, Math.min(count, MAX_ELEMENTS / elements));
        int batches = (count + perBatch - 1) / perBatch;
        List<int[]> chunks = new ArrayList<>(batches);
        int first = 0;
        for (int b = 0; b < batches; b++) {
            int size = count / batches + (b < count % batches ? 1 : 0);
            chunks.add(new int[]{first, size});
            first += size;
        }
        return chunks;
    }

    /**
     * The batching rule: whether {@code count} parameters of one group that share a {@code rows × cols} matrix
     * shape, dtype, device and orthogonalizer run as one batch. A batch always runs the GEMM kernel, so it keeps
     * out the matrices that {@link NsAlgorithm#AUTO} would give a faster kernel alone, and an explicitly requested
     * symmetric or Gram kernel; the exact SVD reference is never batched.
     *
     * @param cpu whether the parameters live on a CPU
     */
    static boolean allows(MuonConfig config, long rows, long cols, int count, boolean cpu) {
        if (!config.batchSameShape()
                || UpdateRecipe.of(config).orthogonalizer() != UpdateRecipe.Orthogonalizer.NEWTON_SCHULZ
                || count < MIN_PARAMETERS || Math.max(rows, cols) > maxSide(config, cpu)) {
            return false;
        }
        NsAlgorithm kernel = config.nsAlgorithm();
        if (kernel == NsAlgorithm.GEMM) {
            return true;
        }
        return kernel == NsAlgorithm.AUTO
                && NewtonSchulz.autoKernel(cpu, config.nsPrecision(), rows, cols) == NsAlgorithm.GEMM;
    }

    /** The largest {@code max(rows, cols)} that batches for this configuration and device. */
    static int maxSide(MuonConfig config, boolean cpu) {
        return cpu && config.nsPrecision() == NsPrecision.BFLOAT16 ? BFLOAT16_CPU_MAX_SIDE : MAX_SIDE;
    }

    /**
     * The first {@code count} slices of the stacked buffer, which is created (in the stack's dtype and on the
     * members' device) at the first call. A prefix of dim 0, so it stays contiguous.
     */
    Tensor stack(int count) {
        if (stack == null) {
            ParameterState head = members.get(0);
            TensorOptions options = head.matrix.options().dtype(new ScalarTypeOptional(stackType));
            stack = NativeLifetime.outliveScope(torch.empty(
                    new long[]{members.size(), head.layout.rows(), head.layout.cols()}, options, null));
        }
        return count == members.size() ? stack : stack.narrow(0, 0, count);
    }

    /** Clears the first {@code count} entries of the per-step arrays, so that they keep no handle past the step. */
    void release(int count) {
        for (int k = 0; k < count; k++) {
            activeGrads[k] = null;
        }
    }

    /**
     * What members of one batch must share: the matrix shape, dtype, device, orthogonalizer instance and fused
     * stages instance (or none), so that one stack dtype serves them all.
     */
    private record Key(long rows, long cols, byte dtype, byte deviceType, byte deviceIndex,
                       Orthogonalizer orthogonalizer, FusedUpdateKernels fusedKernels) {
        static Key of(ParameterState state) {
            return new Key(state.layout.rows(), state.layout.cols(), state.matrix.scalar_type().value,
                    state.matrix.device().type().value, state.matrix.device().index(), state.orthogonalizer,
                    state.fusedKernels);
        }
    }
}
