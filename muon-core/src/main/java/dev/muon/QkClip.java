package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.internal.NamedParameters;
import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * QK-Clip (the "Clip" of MuonClip, Kimi K2 report, arXiv:2507.20534, §2): after each optimizer step, the query
 * and key weights of every attention head whose largest pre-softmax logit exceeded a threshold {@code τ} are scaled
 * back, so that the logits of that head are scaled by {@code γ = τ / S_max}.
 *
 * <p>The user registers, per attention layer, which parameters hold {@code W_q} and {@code W_k} (or which row
 * ranges of a fused QKV weight) with the head counts and head dimension; after each forward pass they
 * {@link #report} each layer's per-head largest logit; the optimizer the hook is attached to
 * ({@link Muon.Builder#qkClip}, {@link MuonAdamW.Builder#qkClip}) rescales right after its step:
 * <pre>
 *   γ_h = τ / S_h  if S_h &gt; τ, else 1               (S_h: the largest logit of query head h)
 *   W_q rows of head h   ·= γ_h^α
 *   W_k rows of head h   ·= γ_h^(1−α)                (one query head per key head)
 *   W_q rows of head h   ·= γ_h, W_k untouched       (a key head shared by several query heads)
 * </pre>
 * The shared-key rule is the report's own for its shared rotary key; see {@code docs/algorithm.md}.
 *
 * <table>
 *   <caption>Defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@code tau}</td><td>{@link #DEFAULT_TAU} (Kimi K2's)</td></tr>
 *   <tr><td>{@code alpha}</td><td>{@link #DEFAULT_ALPHA} (an even split)</td></tr>
 *   <tr><td>attached</td><td>nowhere: no optimizer clips unless built with a {@code QkClip}</td></tr>
 * </table>
 *
 * <pre>{@code
 * QkClip clip = QkClip.builder(model.named_parameters())
 *         .tau(50)
 *         .layer("attn", "attn.q.weight", "attn.k.weight", QkClip.Heads.of(4, 16))
 *         .build();
 * MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters()).qkClip(clip).build();
 * // each step: forward, clip.report("attn", maxLogitPerHead), backward, optimizer.step()
 * }</pre>
 *
 * <p>Between steps the hook holds only the reports of the current step; it keeps nothing across steps, so a
 * checkpoint has nothing of it to save (see {@code docs/checkpoints.md}). In a distributed optimizer the ranks take
 * the maximum of their reports, so all of them rescale alike. Not thread-safe.
 */
public final class QkClip {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The default threshold: the {@code τ = 100} the Kimi K2 report trained with. */
    public static final double DEFAULT_TAU = 100;
    /** The default split of the scale between {@code W_q} and {@code W_k}: {@code √γ} each, as in the report. */
    public static final double DEFAULT_ALPHA = 0.5;

    private final double tau;
    private final double alpha;
    private final Map<String, Layer> layers;
    private boolean anyReported;

    private QkClip(double tau, double alpha, Map<String, Layer> layers) {
        this.tau = tau;
        this.alpha = alpha;
        this.layers = layers;
    }

    /**
     * Starts registering layers whose parameters are named by {@code module.named_parameters()}.
     *
     * @param namedParameters the model's parameters by name
     * @return a builder
     * @throws NullPointerException if the argument is null
     */
    public static Builder builder(StringTensorDict namedParameters) {
        return new Builder(NamedParameters.ordered(namedParameters));
    }

    /**
     * Starts registering layers whose parameters are named by {@code namedParameters}.
     *
     * @param namedParameters parameters by name
     * @return a builder
     * @throws NullPointerException if the argument is null
     */
    public static Builder builder(Map<String, Tensor> namedParameters) {
        Objects.requireNonNull(namedParameters, "namedParameters must not be null");
        return new Builder(new LinkedHashMap<>(namedParameters));
    }

    /**
     * The threshold {@code τ}.
     *
     * @return tau
     */
    public double tau() {
        return tau;
    }

    /**
     * The share {@code α} of the scale exponent that goes to {@code W_q}.
     *
     * @return alpha
     */
    public double alpha() {
        return alpha;
    }

    /**
     * The registered layers, in registration order.
     *
     * @return the layer names
     */
    public List<String> layers() {
        return List.copyOf(layers.keySet());
    }

    /**
     * Reports a layer's largest pre-softmax attention logit per query head, as computed by this step's forward
     * pass (with whatever scaling, such as {@code 1/√d}, the softmax sees). Several reports of one layer in a step
     * (micro-batches of gradient accumulation) keep the larger value per head. The next optimizer step uses and
     * clears them; a layer not reported in a step is not rescaled.
     *
     * @param layer     a registered layer
     * @param maxLogits a real floating tensor of shape {@code [queryHeads]}, on any device
     * @throws IllegalArgumentException if the layer is not registered, or the tensor has another shape or dtype,
     *                                  or holds NaN or an infinity; nothing changes then
     */
    public void report(String layer, Tensor maxLogits) {
        Objects.requireNonNull(layer, "layer must not be null");
        Layer target = layers.get(layer);
        if (target == null) {
            throw new IllegalArgumentException("layer must be a registered layer; '" + layer + "' is not "
                    + "(registered: " + layers.keySet() + ")");
        }
        if (maxLogits == null || !maxLogits.defined()) {
            throw new IllegalArgumentException("maxLogits of layer '" + layer + "' must be a defined tensor");
        }
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            long[] shape = maxLogits.shape();
            if (shape.length != 1 || shape[0] != target.heads.queryHeads()) {
                throw new IllegalArgumentException("maxLogits of layer '" + layer + "' must have shape ["
                        + target.heads.queryHeads() + "] (one value per query head), got " + Arrays.toString(shape));
            }
            if (!maxLogits.is_floating_point() || maxLogits.is_complex()) {
                throw new IllegalArgumentException("maxLogits of layer '" + layer + "' must be a real floating "
                        + "tensor, got " + maxLogits.scalar_type());
            }
            double[] values = new double[target.heads.queryHeads()];
            maxLogits.detach().to(ScalarType.Double).cpu().contiguous().data_ptr_double().get(values);
            for (int h = 0; h < values.length; h++) {
                if (!Double.isFinite(values[h])) {
                    throw new IllegalArgumentException("maxLogits of layer '" + layer + "' must be finite, got "
                            + values[h] + " for head " + h);
                }
            }
            for (int h = 0; h < values.length; h++) {
                target.pending[h] = Math.max(target.pending[h], values[h]);
            }
            anyReported = true;
        }
    }

    /**
     * The factors {@code γ_h} the last step applied to a layer, one per query head: 1 for a head that was not over
     * {@code τ} or not reported.
     *
     * @param layer a registered layer
     * @return a copy of the factors; all 1 before the first step
     * @throws IllegalArgumentException if the layer is not registered
     */
    public double[] lastGammas(String layer) {
        Objects.requireNonNull(layer, "layer must not be null");
        Layer target = layers.get(layer);
        if (target == null) {
            throw new IllegalArgumentException("layer must be a registered layer; '" + layer + "' is not "
                    + "(registered: " + layers.keySet() + ")");
        }
        return target.lastGammas.clone();
    }

    /**
     * Checks, when an optimizer is built with this hook, that every registered tensor is one of the parameters it
     * trains: rescaling a tensor the optimizer does not own would be a silent no-op on the model.
     */
    void requireParametersOf(Set<Long> identities, String optimizer) {
        for (Layer layer : layers.values()) {
            for (Block block : List.of(layer.query, layer.key)) {
                if (!identities.contains(ParameterState.identityOf(block.param))) {
                    throw new IllegalArgumentException("qkClip: parameter '" + block.name + "' of layer '"
                            + layer.name + "' is not a trainable parameter of this " + optimizer);
                }
            }
        }
    }

    /**
     * Refuses, when an optimizer is built with this hook, a registered tensor that Muown updates
     * ({@link MuonConfig#withMuown}): Muown keeps each row's magnitude in its own state and writes it back at the
     * parameter's next step, which would undo the clip's rescaling.
     *
     * @param muown the identities of the parameters Muown updates
     * @throws IllegalArgumentException naming the parameter and the layer
     */
    void refuseMuown(Set<Long> muown) {
        for (Layer layer : layers.values()) {
            for (Block block : List.of(layer.query, layer.key)) {
                if (muown.contains(ParameterState.identityOf(block.param))) {
                    throw new IllegalArgumentException("qkClip cannot rescale parameter '" + block.name + "' of "
                            + "layer '" + layer.name + "': it is updated with muown = on, which keeps each row's "
                            + "magnitude in its own state and would undo the rescaling at the next step");
                }
            }
        }
    }

    /** What every rank must register alike: the all-reduce of {@link #afterStep} has one slot per query head. */
    String fingerprint() {
        StringBuilder text = new StringBuilder("qkClip tau=").append(tau).append(" alpha=").append(alpha);
        for (Layer layer : layers.values()) {
            text.append('\n').append(layer.name).append(' ').append(layer.heads).append(' ')
                    .append(layer.query.name).append('@').append(layer.query.firstRow).append(' ')
                    .append(layer.key.name).append('@').append(layer.key.firstRow);
        }
        return text.toString();
    }

    /**
     * Rescales the heads over {@code τ} from this step's reports and clears them; called by the optimizer after
     * its update, inside its no-grad scope. With peers, a collective: every rank must call it at the same step.
     */
    void afterStep(DistributedGroup group) {
        boolean peers = group != null && group.worldSize() > 1;
        if (!peers && !anyReported) {
            // Nothing reported and nobody to agree with: the common quiet step costs no native call.
            for (Layer layer : layers.values()) {
                Arrays.fill(layer.lastGammas, 1.0);
            }
            return;
        }
        int total = 0;
        for (Layer layer : layers.values()) {
            total += layer.pending.length;
        }
        double[] maxima = new double[total];
        int at = 0;
        for (Layer layer : layers.values()) {
            System.arraycopy(layer.pending, 0, maxima, at, layer.pending.length);
            at += layer.pending.length;
        }
        if (peers) {
            maxima = group.allReduceMax(maxima, "the QK-Clip max logits");
        }
        at = 0;
        for (Layer layer : layers.values()) {
            for (int h = 0; h < layer.pending.length; h++) {
                layer.lastGammas[h] = gamma(maxima[at + h], tau);
            }
            at += layer.pending.length;
            layer.rescale(alpha);
            Arrays.fill(layer.pending, Double.NEGATIVE_INFINITY);
        }
        anyReported = false;
    }

    /** {@code min(1, τ / S)} for a positive {@code S}; 1 for a head at or under {@code τ} (or not reported). */
    static double gamma(double maxLogit, double tau) {
        return maxLogit > tau ? tau / maxLogit : 1.0;
    }

    /** Heads of an attention layer: query heads, key heads (fewer when shared) and the dimension of each. */
    public record Heads(int queryHeads, int keyHeads, int headDim) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Validates the counts.
         *
         * @param queryHeads the number of query heads, {@code >= 1}
         * @param keyHeads   the number of key heads, {@code >= 1}, dividing {@code queryHeads}
         * @param headDim    the rows of {@code W_q} or {@code W_k} per head, {@code >= 1}
         * @throws IllegalArgumentException if a count is out of range or {@code keyHeads} does not divide
         *                                  {@code queryHeads}
         */
        public Heads {
            if (queryHeads < 1) {
                throw new IllegalArgumentException("queryHeads must be >= 1, got " + queryHeads);
            }
            if (keyHeads < 1) {
                throw new IllegalArgumentException("keyHeads must be >= 1, got " + keyHeads);
            }
            if (headDim < 1) {
                throw new IllegalArgumentException("headDim must be >= 1, got " + headDim);
            }
            if (queryHeads % keyHeads != 0) {
                throw new IllegalArgumentException("keyHeads must divide queryHeads (each key head serves a group "
                        + "of query heads), got queryHeads=" + queryHeads + " and keyHeads=" + keyHeads);
            }
        }

        /**
         * Multi-head attention: one key head per query head.
         *
         * @param heads   the number of heads
         * @param headDim the dimension of each
         * @return the heads
         * @throws IllegalArgumentException if a count is {@code < 1}
         */
        public static Heads of(int heads, int headDim) {
            return new Heads(heads, heads, headDim);
        }

        /**
         * Grouped-query (or, with one key head, multi-query) attention: key head {@code j} serves query heads
         * {@code j·g … j·g + g − 1}, {@code g = queryHeads / keyHeads}, as in the usual repeat-interleave layout.
         *
         * @param queryHeads the number of query heads
         * @param keyHeads   the number of key heads
         * @param headDim    the dimension of each head
         * @return the heads
         * @throws IllegalArgumentException if a count is {@code < 1} or {@code keyHeads} does not divide
         *                                  {@code queryHeads}
         */
        public static Heads grouped(int queryHeads, int keyHeads, int headDim) {
            return new Heads(queryHeads, keyHeads, headDim);
        }

        @Override
        public String toString() {
            return "heads=" + queryHeads + "/" + keyHeads + "x" + headDim;
        }
    }

    /** A run of rows of one parameter: the heads of {@code W_q} or {@code W_k}, head after head. */
    private record Block(String name, Tensor param, long firstRow) {
        /** Multiplies the rows of head {@code h} by {@code factor}; a factor of exactly 1 costs nothing. */
        void scaleHead(int h, int headDim, double factor) {
            if (factor != 1.0) {
                param.narrow(0, firstRow + (long) h * headDim, headDim).mul_(new Scalar(factor));
            }
        }
    }

    /** One registered attention layer with this step's reports and the last step's factors. */
    private static final class Layer {
        final String name;
        final Block query;
        final Block key;
        final Heads heads;
        final double[] pending;
        final double[] lastGammas;

        Layer(String name, Block query, Block key, Heads heads) {
            this.name = name;
            this.query = query;
            this.key = key;
            this.heads = heads;
            this.pending = new double[heads.queryHeads()];
            this.lastGammas = new double[heads.queryHeads()];
            Arrays.fill(pending, Double.NEGATIVE_INFINITY);
            Arrays.fill(lastGammas, 1.0);
        }

        /** Applies {@link #lastGammas} by the rules of the class javadoc. */
        void rescale(double alpha) {
            int group = heads.queryHeads() / heads.keyHeads();
            for (int h = 0; h < heads.queryHeads(); h++) {
                double gamma = lastGammas[h];
                if (gamma == 1.0) {
                    continue;
                }
                if (group == 1) {
                    query.scaleHead(h, heads.headDim(), Math.pow(gamma, alpha));
                    key.scaleHead(h, heads.headDim(), Math.pow(gamma, 1 - alpha));
                } else {
                    // The key head is shared: scaling it would also shrink the logits of the other query heads of
                    // its group. The report leaves its shared rotary key alone and gives the query the whole γ.
                    query.scaleHead(h, heads.headDim(), gamma);
                }
            }
        }
    }

    /**
     * Registers attention layers; each call validates its arguments at once and, when it throws, leaves the
     * builder as it was.
     */
    public static final class Builder {
        private final Map<String, Tensor> named;
        private final Map<String, Layer> layers = new LinkedHashMap<>();
        private double tau = DEFAULT_TAU;
        private double alpha = DEFAULT_ALPHA;

        private Builder(Map<String, Tensor> named) {
            this.named = named;
        }

        /**
         * The threshold on a head's largest logit.
         *
         * @param value {@code τ}, finite and {@code > 0}
         * @return this builder
         * @throws IllegalArgumentException if it is not finite or not positive
         */
        public Builder tau(double value) {
            if (!Double.isFinite(value) || value <= 0) {
                throw new IllegalArgumentException("tau must be finite and > 0, got " + value);
            }
            this.tau = value;
            return this;
        }

        /**
         * How the scale is split: {@code W_q} gets {@code γ^α}, {@code W_k} gets {@code γ^(1−α)}.
         *
         * @param value {@code α} in {@code [0, 1]}
         * @return this builder
         * @throws IllegalArgumentException if it lies outside {@code [0, 1]} or is NaN
         */
        public Builder alpha(double value) {
            if (!(value >= 0 && value <= 1)) {
                throw new IllegalArgumentException("alpha must be in [0, 1], got " + value);
            }
            this.alpha = value;
            return this;
        }

        /**
         * Registers a layer with separate query and key weights: {@code W_q} of shape
         * {@code [queryHeads·headDim, in]} and {@code W_k} of shape {@code [keyHeads·headDim, in]}, head {@code h}
         * in rows {@code h·headDim … (h+1)·headDim − 1} (PyTorch's {@code Linear} layout).
         *
         * @param layer the layer's name, used by {@link QkClip#report}
         * @param query the name of {@code W_q}
         * @param key   the name of {@code W_k}
         * @param heads the head counts and dimension
         * @return this builder
         * @throws IllegalArgumentException if the layer name is blank or taken, a parameter name is unknown, a
         *                                  parameter is not a real floating matrix, its rows are not
         *                                  {@code heads·headDim}, or its rows are registered already
         */
        public Builder layer(String layer, String query, String key, Heads heads) {
            Objects.requireNonNull(heads, "heads must not be null");
            checkLayerName(layer);
            Tensor q = matrix(layer, "query", query);
            Tensor k = matrix(layer, "key", key);
            requireRows(layer, "query", query, q, (long) heads.queryHeads() * heads.headDim(), "queryHeads·headDim");
            requireRows(layer, "key", key, k, (long) heads.keyHeads() * heads.headDim(), "keyHeads·headDim");
            return add(new Layer(layer, new Block(query, q, 0), new Block(key, k, 0), heads));
        }

        /**
         * Registers a layer whose query and key weights are row ranges of one fused weight (such as a QKV
         * projection {@code [3d, d]}): the query heads are rows {@code queryFirstRow …} and the key heads rows
         * {@code keyFirstRow …}, each head's rows contiguous and the heads one after the other.
         *
         * @param layer         the layer's name, used by {@link QkClip#report}
         * @param fused         the name of the fused weight
         * @param heads         the head counts and dimension
         * @param queryFirstRow the first row of query head 0
         * @param keyFirstRow   the first row of key head 0
         * @return this builder
         * @throws IllegalArgumentException if the layer name is blank or taken, the parameter name is unknown,
         *                                  the parameter is not a real floating matrix, a range is negative,
         *                                  overruns its rows or overlaps the other, or its rows are registered
         *                                  already
         */
        public Builder fusedLayer(String layer, String fused, Heads heads, long queryFirstRow, long keyFirstRow) {
            Objects.requireNonNull(heads, "heads must not be null");
            checkLayerName(layer);
            Tensor w = matrix(layer, "fused", fused);
            long qRows = (long) heads.queryHeads() * heads.headDim();
            long kRows = (long) heads.keyHeads() * heads.headDim();
            requireRange(layer, fused, w, "queryFirstRow", queryFirstRow, qRows);
            requireRange(layer, fused, w, "keyFirstRow", keyFirstRow, kRows);
            if (queryFirstRow < keyFirstRow + kRows && keyFirstRow < queryFirstRow + qRows) {
                throw new IllegalArgumentException("layer '" + layer + "': the query rows [" + queryFirstRow + ", "
                        + (queryFirstRow + qRows) + ") and key rows [" + keyFirstRow + ", " + (keyFirstRow + kRows)
                        + ") of parameter '" + fused + "' must not overlap");
            }
            return add(new Layer(layer, new Block(fused, w, queryFirstRow), new Block(fused, w, keyFirstRow),
                    heads));
        }

        /**
         * Creates the hook, to be passed to an optimizer's builder.
         *
         * @return the hook
         * @throws IllegalArgumentException if no layer was registered
         */
        public QkClip build() {
            if (layers.isEmpty()) {
                throw new IllegalArgumentException("layers must not be empty: register at least one attention "
                        + "layer with layer(..) or fusedLayer(..)");
            }
            return new QkClip(tau, alpha, new LinkedHashMap<>(layers));
        }

        private void checkLayerName(String layer) {
            if (layer == null || layer.isBlank()) {
                throw new IllegalArgumentException("layer must be a non-blank name, got "
                        + (layer == null ? "null" : "'" + layer + "'"));
            }
            if (layers.containsKey(layer)) {
                throw new IllegalArgumentException("layer must be a new name; '" + layer + "' is registered "
                        + "already");
            }
        }

        private Tensor matrix(String layer, String role, String name) {
            if (name == null || !named.containsKey(name)) {
                throw new IllegalArgumentException("layer '" + layer + "': " + role + " must name a parameter; '"
                        + name + "' is not one (parameters: " + named.keySet() + ")");
            }
            Tensor p = named.get(name);
            if (p == null || !p.defined() || p.dim() != 2) {
                throw new IllegalArgumentException("layer '" + layer + "': " + role + " parameter '" + name
                        + "' must be a matrix, got shape "
                        + (p == null || !p.defined() ? "undefined" : Arrays.toString(p.shape())));
            }
            if (!p.is_floating_point() || p.is_complex()) {
                throw new IllegalArgumentException("layer '" + layer + "': " + role + " parameter '" + name
                        + "' must be real floating point, got " + p.scalar_type());
            }
            return p;
        }

        private static void requireRows(String layer, String role, String name, Tensor p, long rows,
                                        String rule) {
            if (p.size(0) != rows) {
                throw new IllegalArgumentException("layer '" + layer + "': " + role + " parameter '" + name
                        + "' must have " + rule + " = " + rows + " rows, got shape " + Arrays.toString(p.shape()));
            }
        }

        private static void requireRange(String layer, String name, Tensor p, String what, long first,
                                         long rows) {
            // first + rows could overflow: compare with what is left instead.
            if (first < 0 || rows > p.size(0) || first > p.size(0) - rows) {
                throw new IllegalArgumentException("layer '" + layer + "': " + what + " must leave " + rows
                        + " rows inside parameter '" + name + "' of shape " + Arrays.toString(p.shape())
                        + ", got " + first);
            }
        }

        /** Adds a validated layer unless one of its row ranges belongs to a layer registered before. */
        private Builder add(Layer layer) {
            int headDim = layer.heads.headDim();
            long[] qRange = {layer.query.firstRow, layer.query.firstRow + (long) layer.heads.queryHeads() * headDim};
            long[] kRange = {layer.key.firstRow, layer.key.firstRow + (long) layer.heads.keyHeads() * headDim};
            for (Layer other : layers.values()) {
                for (Block mine : List.of(layer.query, layer.key)) {
                    long[] r = mine == layer.query ? qRange : kRange;
                    for (Block theirs : List.of(other.query, other.key)) {
                        long count = theirs == other.query ? other.heads.queryHeads() : other.heads.keyHeads();
                        long end = theirs.firstRow + count * other.heads.headDim();
                        if (ParameterState.identityOf(theirs.param) == ParameterState.identityOf(mine.param)
                                && r[0] < end && theirs.firstRow < r[1]) {
                            throw new IllegalArgumentException("layer '" + layer.name + "': rows [" + r[0] + ", "
                                    + r[1] + ") of parameter '" + mine.name + "' belong to layer '" + other.name
                                    + "' already; each row is rescaled by one head only");
                        }
                    }
                }
            }
            if (ParameterState.identityOf(layer.query.param) == ParameterState.identityOf(layer.key.param)
                    && layer.query.firstRow == 0 && layer.key.firstRow == 0) {
                throw new IllegalArgumentException("layer '" + layer.name + "': query and key are the same "
                        + "parameter '" + layer.query.name + "'; register a fused weight with fusedLayer(..)");
            }
            layers.put(layer.name, layer);
            return this;
        }
    }

    /** The identities of a collection of tensors, for {@link #requireParametersOf}. */
    static Set<Long> identities(Collection<Tensor> tensors) {
        Set<Long> ids = new java.util.HashSet<>();
        tensors.forEach(t -> ids.add(ParameterState.identityOf(t)));
        return ids;
    }
}
