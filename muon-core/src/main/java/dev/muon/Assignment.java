package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * Which optimizer of a {@link MuonAdamW} updates each named parameter, and why: a table that prints well
 * ({@link #toString()}).
 *
 * <p>The default rule ({@link #defaultMuonRule()}) sends a parameter to Muon when it is a hidden weight matrix:
 * <ol>
 *   <li>it has 2 dims, or 4 (a conv filter {@code [out, in, kh, kw]}, which Muon flattens to
 *       {@code [out, in·kh·kw]});</li>
 *   <li>and its name does not look like an embedding or an output head: no module in the name contains
 *       {@code embed} or is one of {@code wte}, {@code wpe}, {@code tok_emb}, {@code pos_emb}, {@code lm_head},
 *       {@code classifier}; and the top-level module is not {@code output}, {@code head}, {@code heads},
 *       {@code fc}, {@code logits} or {@code classifier} (a nested {@code attention.output.dense} is a hidden
 *       layer, a top-level {@code output} is Llama's head and {@code fc} is ResNet's).</li>
 * </ol>
 * Everything else goes to AdamW: biases, norm gains and scalars (fewer than 2 dims), 3-D tensors, embeddings, the
 * head. A tensor registered under two names (tied weights) is counted once, under its first name, on AdamW.
 * {@link MuonAdamW.Builder} can replace the rule by a predicate and force names either way.
 *
 * <pre>{@code
 * MuonAdamW opt = MuonAdamW.builder(model.named_parameters()).build();
 * System.out.println(opt.assignment());
 * }</pre>
 */
public final class Assignment {
    private static final Set<String> EMBEDDING_OR_HEAD_ANYWHERE =
            Set.of("wte", "wpe", "tok_emb", "pos_emb", "lm_head", "classifier");
    private static final Set<String> HEAD_AT_TOP = Set.of("output", "head", "heads", "fc", "logits", "classifier");

    /**
     * One parameter's row.
     *
     * @param name      the parameter's name
     * @param shape     its shape
     * @param dtype     its dtype's name
     * @param optimizer the optimizer that updates it
     * @param reason    why (the rule or override that decided)
     * @param lr        the lr its update uses now: Muon's lr times the shape ratio and extra scale, or AdamW's lr
     * @param stateBytes the optimizer state it holds: one buffer on Muon, two moments on AdamW, 0 for an alias
     */
    public record Row(String name, long[] shape, String dtype, OptimizerKind optimizer, String reason, double lr,
                      long stateBytes) {
        /**
         * Copies the shape.
         *
         * @throws NullPointerException if a reference is null
         */
        public Row {
            shape = shape.clone();
        }

        /**
         * The shape.
         *
         * @return a copy of the shape
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }
    }

    private final List<Row> rows;
    private final List<String> frozen;
    private final long adamWOnlyStateBytes;

    Assignment(List<Row> rows, List<String> frozen, long adamWOnlyStateBytes) {
        this.rows = List.copyOf(rows);
        this.frozen = List.copyOf(frozen);
        this.adamWOnlyStateBytes = adamWOnlyStateBytes;
    }

    /**
     * The default rule: true for a hidden weight matrix (see the class comment).
     *
     * @return a predicate on (name, tensor) that is true for parameters that go to Muon
     */
    public static BiPredicate<String, Tensor> defaultMuonRule() {
        return (name, tensor) -> defaultReason(name, tensor.dim()) == null;
    }

    /** Null when the default rule sends the parameter to Muon, else why it goes to AdamW. */
    static String defaultReason(String name, long dims) {
        if (dims < 2) {
            return "fewer than 2 dims";
        }
        if (dims == 3) {
            return "3-D (force it to Muon with stacked weights allowed)";
        }
        if (dims > 4) {
            return dims + "-D";
        }
        String[] parts = name.split("\\.");
        int modules = parts.length > 1 ? parts.length - 1 : 1;
        for (int i = 0; i < modules; i++) {
            String part = parts[i].toLowerCase(Locale.ROOT);
            if (part.contains("embed") || EMBEDDING_OR_HEAD_ANYWHERE.contains(part)) {
                return "embedding or head ('" + parts[i] + "')";
            }
        }
        if (HEAD_AT_TOP.contains(parts[0].toLowerCase(Locale.ROOT))) {
            return "output head ('" + parts[0] + "')";
        }
        return null;
    }

    /**
     * Every trainable parameter, in the order given.
     *
     * @return the rows
     */
    public List<Row> rows() {
        return rows;
    }

    /**
     * The names left out because they do not require gradients.
     *
     * @return the frozen names
     */
    public List<String> frozen() {
        return frozen;
    }

    /**
     * The names of the parameters of one optimizer.
     *
     * @param optimizer which one
     * @return the names, in order; aliases of tied weights excluded
     */
    public List<String> names(OptimizerKind optimizer) {
        List<String> names = new ArrayList<>();
        for (Row row : rows) {
            if (row.optimizer == optimizer && !isAlias(row)) {
                names.add(row.name);
            }
        }
        return names;
    }

    private static boolean isAlias(Row row) {
        return row.reason.startsWith("tied to ");
    }

    /**
     * The optimizer state this assignment holds, in bytes (tensor data only).
     *
     * @return the sum of the rows' state bytes
     */
    public long stateBytes() {
        long sum = 0;
        for (Row row : rows) {
            sum += row.stateBytes;
        }
        return sum;
    }

    /**
     * The state libtorch's {@code AdamW} alone would hold for the same parameters: two moments of each distinct
     * tensor, in its dtype.
     *
     * @return bytes
     */
    public long adamWOnlyStateBytes() {
        return adamWOnlyStateBytes;
    }

    /**
     * A fixed-width table: one line per parameter, then totals.
     *
     * @return the table
     */
    @Override
    public String toString() {
        int nameWidth = "name".length();
        int shapeWidth = "shape".length();
        for (Row row : rows) {
            nameWidth = Math.max(nameWidth, row.name.length());
            shapeWidth = Math.max(shapeWidth, Arrays.toString(row.shape).length());
        }
        String format = "%-" + nameWidth + "s  %-" + shapeWidth + "s  %-8s  %-6s  %-10s  %12s  %s%n";
        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, format, "name", "shape", "dtype", "opt", "lr", "state bytes",
                "why"));
        int muon = 0;
        for (Row row : rows) {
            if (row.optimizer == OptimizerKind.MUON) {
                muon++;
            }
            out.append(String.format(Locale.ROOT, format, row.name, Arrays.toString(row.shape), row.dtype,
                    row.optimizer == OptimizerKind.MUON ? "muon" : "adamw",
                    String.format(Locale.ROOT, "%.4g", row.lr), row.stateBytes, row.reason));
        }
        out.append(String.format(Locale.ROOT, "%d on Muon, %d on AdamW; state %d bytes = %.3f x AdamW alone (%d)%n",
                muon, rows.size() - muon, stateBytes(),
                adamWOnlyStateBytes == 0 ? 0.0 : (double) stateBytes() / adamWOnlyStateBytes, adamWOnlyStateBytes));
        if (!frozen.isEmpty()) {
            out.append("left out (requires_grad == false): ").append(String.join(", ", frozen)).append('\n');
        }
        return out.toString();
    }
}
