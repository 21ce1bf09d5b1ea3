package dev.muon;

import dev.muon.internal.TorchNatives;
import java.util.Arrays;

/**
 * A rule that has Muon orthogonalize a parameter's rows in blocks instead of as one matrix: the update {@code U}
 * of a {@code rows × cols} parameter is cut along its rows, Newton–Schulz runs on each block on its own, and each
 * block takes the lr adjustment of its own shape. An immutable value, validated at construction; whether it fits a
 * parameter (the blocks cover its rows exactly) is checked when the optimizer is built.
 *
 * <table>
 *   <caption>Forms</caption>
 *   <tr><th>factory</th><th>blocks</th><th>typical use</th></tr>
 *   <tr><td>{@link #splitRows(int...)}</td><td>the given row counts, in order</td>
 *       <td>a fused QKV weight {@code [3d, d]}: {@code splitRows(d, d, d)}; grouped-query attention:
 *       {@code splitRows(dq, dkv, dkv)}</td></tr>
 *   <tr><td>{@link #perHead(int)}</td><td>{@code rows / headDim} blocks of {@code headDim} rows</td>
 *       <td>per-head orthogonalization of {@code W_q} or {@code W_k} ({@code [heads·headDim, d]})</td></tr>
 * </table>
 *
 * <p>Blocks of one shape run as one batch of Newton–Schulz iterations; blocks of different shapes run one after
 * the other. The momentum buffer stays the whole parameter's: only the orthogonalization is split. Set it on a
 * builder: {@link MuonAdamW.Builder#rowSplit(String, RowSplit)}, {@link Muon.Builder#rowSplit} or their
 * predicate forms. {@code docs/algorithm.md} states the update and why each block takes its own lr adjustment.
 *
 * <pre>{@code
 * MuonAdamW opt = MuonAdamW.builder(model.named_parameters())
 *         .rowSplit("h.0.attn.c_attn.weight", RowSplit.splitRows(64, 64, 64))
 *         .build();
 * }</pre>
 */
public final class RowSplit {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The block sizes of a {@code splitRows} rule; null for {@code perHead}. */
    private final int[] sizes;
    /** The head dimension of a {@code perHead} rule; 0 for {@code splitRows}. */
    private final int headDim;

    private RowSplit(int[] sizes, int headDim) {
        this.sizes = sizes;
        this.headDim = headDim;
    }

    /**
     * Blocks of the given row counts, top to bottom; they must add up to the parameter's rows.
     *
     * @param blockRows the rows of each block, each {@code > 0}
     * @return the rule
     * @throws IllegalArgumentException if no block is given or a size is {@code <= 0}
     * @throws NullPointerException     if {@code blockRows} is null
     */
    public static RowSplit splitRows(int... blockRows) {
        if (blockRows == null) {
            throw new NullPointerException("blockRows must not be null");
        }
        if (blockRows.length == 0) {
            throw new IllegalArgumentException("splitRows needs at least one block size, got none");
        }
        for (int k = 0; k < blockRows.length; k++) {
            if (blockRows[k] <= 0) {
                throw new IllegalArgumentException("splitRows block sizes must be > 0, got " + blockRows[k]
                        + " at index " + k + " of " + Arrays.toString(blockRows));
            }
        }
        return new RowSplit(blockRows.clone(), 0);
    }

    /**
     * Blocks of {@code headDim} rows each, one per attention head; {@code headDim} must divide the parameter's
     * rows.
     *
     * @param headDim the rows of each head, {@code > 0}
     * @return the rule
     * @throws IllegalArgumentException if {@code headDim <= 0}
     */
    public static RowSplit perHead(int headDim) {
        if (headDim <= 0) {
            throw new IllegalArgumentException("perHead headDim must be > 0, got " + headDim);
        }
        return new RowSplit(null, headDim);
    }

    /**
     * The head dimension of a {@link #perHead(int)} rule.
     *
     * @return the rows of each head, or 0 for a {@link #splitRows(int...)} rule
     */
    public int headDim() {
        return headDim;
    }

    /**
     * The block sizes of a {@link #splitRows(int...)} rule.
     *
     * @return a copy of the sizes, top to bottom; empty for a {@link #perHead(int)} rule
     */
    public int[] blockSizes() {
        return sizes == null ? new int[0] : sizes.clone();
    }

    /**
     * The rows of each block for a parameter of {@code rows} rows.
     *
     * @param rows  the parameter's rows (of its matrix view)
     * @param label how to name the parameter in a message
     * @return the block sizes, top to bottom
     * @throws IllegalArgumentException if the blocks do not cover exactly {@code rows} rows
     */
    long[] blockRows(long rows, String label) {
        if (sizes == null) {
            if (rows % headDim != 0) {
                throw new IllegalArgumentException(label + " has " + rows + " rows, which " + this
                        + " cannot split: headDim must divide the rows");
            }
            long[] blocks = new long[(int) (rows / headDim)];
            Arrays.fill(blocks, headDim);
            return blocks;
        }
        long sum = 0;
        long[] blocks = new long[sizes.length];
        for (int k = 0; k < sizes.length; k++) {
            blocks[k] = sizes[k];
            sum += sizes[k];
        }
        if (sum != rows) {
            throw new IllegalArgumentException(label + " has " + rows + " rows, but the blocks of " + this
                    + " add up to " + sum + "; they must add up to the rows");
        }
        return blocks;
    }

    /**
     * The rule as its factory call: {@code splitRows(64, 64, 64)} or {@code perHead(16)}; checkpoints and the
     * assignment table record it in this form.
     *
     * @return the text
     */
    @Override
    public String toString() {
        if (sizes == null) {
            return "perHead(" + headDim + ")";
        }
        StringBuilder text = new StringBuilder("splitRows(");
        for (int k = 0; k < sizes.length; k++) {
            text.append(k == 0 ? "" : ", ").append(sizes[k]);
        }
        return text.append(')').toString();
    }

    /**
     * Equal when both are the same form with the same sizes.
     *
     * @param other another object
     * @return whether it is the same rule
     */
    @Override
    public boolean equals(Object other) {
        return other instanceof RowSplit r && headDim == r.headDim && Arrays.equals(sizes, r.sizes);
    }

    /**
     * A hash consistent with {@link #equals(Object)}.
     *
     * @return the hash
     */
    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(sizes) + headDim;
    }
}
