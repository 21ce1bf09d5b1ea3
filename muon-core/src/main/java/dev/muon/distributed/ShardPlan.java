package dev.muon.distributed;

import dev.muon.internal.TorchNatives;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * Which rank owns each Muon parameter: the one that keeps its momentum and runs its Newton–Schulz iteration.
 *
 * <p>Assigned longest processing time first (Graham, 1969): parameters in decreasing order of their
 * Newton–Schulz FLOPs, each to the rank with the least work so far (ties to the lower rank, then the earlier
 * parameter), which puts the busiest rank within 4/3 of the optimum in the worst case and within a few percent
 * on transformer shapes. The plan depends only on the shapes and the world size, so every rank computes the same
 * plan without talking to the others.
 *
 * <p>The cost of one iteration on an {@code r×c} matrix, with {@code m = min(r, c)} and {@code n = max(r, c)}, is
 * {@code 4·m²·n + 2·m³} multiply-adds: {@code X·Xᵀ} and {@code B·X} take {@code 2·m²·n} each, {@code A·A} takes
 * {@code 2·m³}. The iteration count is the same for every parameter of a group, so it cancels.
 */
public final class ShardPlan {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final int worldSize;
    private final long[][] shapes;
    private final int[] owners;
    private final long[] flops;
    private final long[] elements;

    private ShardPlan(int worldSize, long[][] shapes, int[] owners, long[] flops, long[] elements) {
        this.worldSize = worldSize;
        this.shapes = shapes;
        this.owners = owners;
        this.flops = flops;
        this.elements = elements;
    }

    /**
     * Plans {@code matrixShapes} (rows, columns each, in parameter order) over {@code worldSize} ranks.
     *
     * @param matrixShapes the matrix shape each parameter is orthogonalized as
     * @param worldSize    the number of ranks, at least 1
     * @return the plan
     * @throws IllegalArgumentException if {@code worldSize < 1} or a shape is not two sizes {@code >= 0}
     */
    public static ShardPlan longestProcessingTimeFirst(List<long[]> matrixShapes, int worldSize) {
        return longestProcessingTimeFirst(matrixShapes, List.of(), worldSize);
    }

    /**
     * Plans {@code matrixShapes} over {@code worldSize} ranks, keeping each list of {@code together} (parameter
     * indices, such as a same-shape batch's members) on one rank: it is placed as one item that costs the sum of
     * its members. A batch then runs whole on its owner, as it would in one process, so that the result does not
     * depend on the number of ranks.
     *
     * @param matrixShapes the matrix shape each parameter is orthogonalized as
     * @param together     lists of indices that go to one rank; an index in none is an item of its own
     * @param worldSize    the number of ranks, at least 1
     * @return the plan
     * @throws IllegalArgumentException if {@code worldSize < 1}, a shape is not two sizes {@code >= 0}, a list of
     *                                  {@code together} is empty or holds a null, or an index is out of range or in
     *                                  two lists
     */
    public static ShardPlan longestProcessingTimeFirst(List<long[]> matrixShapes, List<List<Integer>> together,
                                                       int worldSize) {
        Objects.requireNonNull(matrixShapes, "matrixShapes must not be null");
        Objects.requireNonNull(together, "together must not be null");
        if (worldSize < 1) {
            throw new IllegalArgumentException("worldSize must be >= 1, got " + worldSize);
        }
        int n = matrixShapes.size();
        long[][] shapes = new long[n][];
        long[] cost = new long[n];
        for (int i = 0; i < n; i++) {
            long[] shape = matrixShapes.get(i);
            if (shape == null || shape.length != 2 || shape[0] < 0 || shape[1] < 0) {
                throw new IllegalArgumentException("matrixShapes[" + i + "] must be two sizes >= 0, got "
                        + (shape == null ? "null" : Arrays.toString(shape)));
            }
            shapes[i] = shape.clone();
            cost[i] = iterationFlops(shape[0], shape[1]);
        }
        // Items: each list of together, then every index in none, each with its members and summed cost.
        List<int[]> items = new ArrayList<>();
        boolean[] placed = new boolean[n];
        for (int list = 0; list < together.size(); list++) {
            List<Integer> members = together.get(list);
            if (members == null || members.isEmpty() || members.stream().anyMatch(Objects::isNull)) {
                throw new IllegalArgumentException("together[" + list + "] must list at least one index and no null, "
                        + "got " + members);
            }
            int[] item = new int[members.size()];
            for (int k = 0; k < item.length; k++) {
                int index = members.get(k);
                if (index < 0 || index >= n || placed[index]) {
                    throw new IllegalArgumentException("together must list indices in [0, " + n + ") at most once, "
                            + "got " + index + " in " + members);
                }
                placed[index] = true;
                item[k] = index;
            }
            items.add(item);
        }
        for (int i = 0; i < n; i++) {
            if (!placed[i]) {
                items.add(new int[]{i});
            }
        }
        long[] itemCost = new long[items.size()];
        for (int t = 0; t < itemCost.length; t++) {
            for (int index : items.get(t)) {
                itemCost[t] += cost[index];
            }
        }
        List<Integer> order = new ArrayList<>();
        for (int t = 0; t < items.size(); t++) {
            order.add(t);
        }
        // Largest first; among equals, the item of the lowest first index, as for single parameters before.
        order.sort(Comparator.<Integer>comparingLong(t -> itemCost[t]).reversed()
                .thenComparing(t -> items.get(t)[0]));
        int[] owners = new int[n];
        long[] load = new long[worldSize];
        long[] elements = new long[worldSize];
        for (int t : order) {
            int best = 0;
            for (int r = 1; r < worldSize; r++) {
                if (load[r] < load[best]) {
                    best = r;
                }
            }
            load[best] += itemCost[t];
            for (int index : items.get(t)) {
                owners[index] = best;
                elements[best] += shapes[index][0] * shapes[index][1];
            }
        }
        return new ShardPlan(worldSize, shapes, owners, load, elements);
    }

    /**
     * The multiply-adds of one Newton–Schulz iteration on an {@code rows×cols} matrix.
     *
     * @param rows the rows
     * @param cols the columns
     * @return {@code 4·m²·n + 2·m³} with {@code m = min}, {@code n = max}
     */
    public static long iterationFlops(long rows, long cols) {
        long m = Math.min(rows, cols);
        long n = Math.max(rows, cols);
        return 4 * m * m * n + 2 * m * m * m;
    }

    /**
     * The number of ranks.
     *
     * @return the world size
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * The number of parameters planned.
     *
     * @return the count
     */
    public int size() {
        return owners.length;
    }

    /**
     * The rank that owns parameter {@code index}.
     *
     * @param index the parameter's position in the planned list
     * @return its rank
     * @throws IllegalArgumentException if the index is out of range
     */
    public int owner(int index) {
        if (index < 0 || index >= owners.length) {
            throw new IllegalArgumentException("index must be in [0, " + owners.length + "), got " + index);
        }
        return owners[index];
    }

    /**
     * The parameters a rank owns, in parameter order.
     *
     * @param rank the rank
     * @return their indices
     * @throws IllegalArgumentException if the rank is out of range
     */
    public List<Integer> ownedBy(int rank) {
        checkRank(rank);
        List<Integer> owned = new ArrayList<>();
        for (int i = 0; i < owners.length; i++) {
            if (owners[i] == rank) {
                owned.add(i);
            }
        }
        return Collections.unmodifiableList(owned);
    }

    /**
     * The Newton–Schulz multiply-adds per iteration a rank does.
     *
     * @param rank the rank
     * @return FLOPs (multiply-adds)
     * @throws IllegalArgumentException if the rank is out of range
     */
    public long flops(int rank) {
        checkRank(rank);
        return flops[rank];
    }

    /**
     * The momentum elements a rank keeps.
     *
     * @param rank the rank
     * @return elements
     * @throws IllegalArgumentException if the rank is out of range
     */
    public long elements(int rank) {
        checkRank(rank);
        return elements[rank];
    }

    /**
     * The load-balance figure: the busiest rank's Newton–Schulz FLOPs over the ideal share {@code total / W}.
     * 1.0 is perfect; 1.1 means the slowest rank does 10% more than an even split.
     *
     * @return the ratio, 1.0 for an empty plan
     */
    public double imbalance() {
        return ratioToMean(flops);
    }

    /**
     * The same figure for momentum memory: the largest rank's elements over {@code total / W}.
     *
     * @return the ratio, 1.0 for an empty plan
     */
    public double stateImbalance() {
        return ratioToMean(elements);
    }

    private double ratioToMean(long[] perRank) {
        long total = 0;
        long max = 0;
        for (long v : perRank) {
            total += v;
            max = Math.max(max, v);
        }
        return total == 0 ? 1.0 : max * (double) worldSize / total;
    }

    private void checkRank(int rank) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank must be in [0, " + worldSize + "), got " + rank);
        }
    }

    /**
     * The plan as a table: one line per rank with its parameters, FLOPs and elements, then the imbalance.
     *
     * @return the text
     */
    @Override
    public String toString() {
        StringBuilder text = new StringBuilder();
        for (int r = 0; r < worldSize; r++) {
            text.append(String.format("rank %d: %d parameters, %.3g NS FLOPs/iteration, %d momentum elements%n",
                    r, ownedBy(r).size(), (double) flops[r], elements[r]));
        }
        text.append(String.format("imbalance %.3f (FLOPs), %.3f (state)", imbalance(), stateImbalance()));
        return text.toString();
    }
}
