package dev.muon;

import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What one Muon parameter's step does, derived from a {@link MuonConfig} alone (no tensors, no libtorch): one
 * element per part of the update, in the order they run.
 * <pre>
 *   momentum        B = B.lerp(g, 1 − μ); U = nesterov ? g.lerp(B, μ) : B       EMA, or stored in bfloat16
 *   orthogonalizer  O = NS(U) in nsPrecision with nsAlgorithm's kernel           or the exact SVD reference
 *   rowScaling      O as it is, or NorMuon's neuron-wise row scaling with its second moment
 *   applier         decoupled weight decay and p −= lr·ratio·O, or cautious decay; or Muown's direction and row
 *                   magnitudes (its momentum element feeds the direction's gradient)
 *   weightHook      around the applier: none; Hyperball's sphere; RadialBrake; RelativeUpdate; an update floor
 * </pre>
 * One word, one meaning: "normalize" is only the Newton–Schulz input's division by its norm; what NorMuon does to
 * {@code O} is a row scaling.
 * Every binding maps each element to its own operations (muon-core to libtorch's, muon-djl to DJL's
 * {@code NDArray}s) with an exhaustive {@code switch}, so an element a binding has no operation for is a compile
 * error there until it is mapped or refused; a refusal names the setting that chose the element
 * ({@link Element#setting()}) through {@link #refused}. The hyperparameters (lr, weight decay, momentum, Nesterov,
 * lr adjustment) are the config's values, which every element reads.
 *
 * @param momentum       how the momentum buffer is kept
 * @param orthogonalizer what turns {@code U} into {@code O}
 * @param nsPrecision    the Newton–Schulz iteration's dtype (for {@link Orthogonalizer#NEWTON_SCHULZ})
 * @param nsAlgorithm    the Newton–Schulz kernel choice (for {@link Orthogonalizer#NEWTON_SCHULZ})
 * @param nsPreconditioning how the Newton–Schulz input is brought under spectral norm 1: PyTorch's Frobenius
 *                       normalization, or Turbo-Muon's AOL rescaling (for {@link Orthogonalizer#NEWTON_SCHULZ})
 * @param rowScaling     what happens to {@code O} before it is applied
 * @param applier        how {@code O} changes the parameter
 * @param weightHook     what measures the parameter before its whole update and acts on the update or the
 *                       parameter around the applier
 */
public record UpdateRecipe(Momentum momentum, Orthogonalizer orthogonalizer, NsPrecision nsPrecision,
                           NsAlgorithm nsAlgorithm, NsPreconditioning nsPreconditioning, RowScaling rowScaling,
                           Applier applier, WeightHook weightHook) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** Muon's momentum buffer in the parameter's dtype: PyTorch's {@code momentum_buffer}. */
    public static final BufferSpec MOMENTUM = new BufferSpec("momentum", "momentum_buffer", "momentum buffer",
            BufferSpec.Shape.PARAMETER, BufferSpec.Dtype.PARAMETER, BufferSpec.Values.FINITE, true);
    /** Muon's momentum buffer stored in bfloat16 ({@link MomentumPrecision#BFLOAT16}): the same buffer, narrower. */
    public static final BufferSpec MOMENTUM_BFLOAT16 = new BufferSpec("momentum", "momentum_buffer",
            "momentum buffer", BufferSpec.Shape.PARAMETER, BufferSpec.Dtype.BFLOAT16, BufferSpec.Values.FINITE, true);
    /** NorMuon's per-row second moment ({@link NorMuonConfig}): float32 (float64 for a float64 parameter). */
    public static final BufferSpec SECOND_MOMENT = new BufferSpec("second_moment", "normuon_second_moment",
            "NorMuon second moment", BufferSpec.Shape.ROWS, BufferSpec.Dtype.WIDE,
            BufferSpec.Values.FINITE_NON_NEGATIVE, true);
    /**
     * Muown's momentum buffer ({@link MuownConfig}): the same buffer as {@link #MOMENTUM}, kept in float32 (float64
     * for a float64 parameter), as Muown's reference keeps it whatever the parameter's dtype.
     */
    public static final BufferSpec MUOWN_MOMENTUM = new BufferSpec("momentum", "momentum_buffer", "momentum buffer",
            BufferSpec.Shape.PARAMETER, BufferSpec.Dtype.WIDE, BufferSpec.Values.FINITE, true);
    /** Muown's per-row magnitudes {@code g}, seeded with the parameter's row norms at its first step. */
    public static final BufferSpec MUOWN_G = new BufferSpec("muown_g", "g", "Muown row magnitudes",
            BufferSpec.Shape.ROWS, BufferSpec.Dtype.WIDE, BufferSpec.Values.FINITE, true);
    /** Muown's per-row norms of the direction {@code v}, seeded as {@link #MUOWN_G} is. */
    public static final BufferSpec MUOWN_V_NORM = new BufferSpec("muown_v_norm", "v_norm", "Muown direction norms",
            BufferSpec.Shape.ROWS, BufferSpec.Dtype.WIDE, BufferSpec.Values.FINITE_NON_NEGATIVE, true);
    /** Adam's first moment of the magnitudes' gradient. */
    public static final BufferSpec MUOWN_M_G = new BufferSpec("muown_m_g", "m_g", "Muown magnitude first moment",
            BufferSpec.Shape.ROWS, BufferSpec.Dtype.WIDE, BufferSpec.Values.FINITE, true);
    /** Adam's second moment of the magnitudes' gradient. */
    public static final BufferSpec MUOWN_V_G = new BufferSpec("muown_v_g", "v_g", "Muown magnitude second moment",
            BufferSpec.Shape.ROWS, BufferSpec.Dtype.WIDE, BufferSpec.Values.FINITE_NON_NEGATIVE, true);
    /**
     * The parameter's own step count {@code t} of Adam's bias corrections: a parameter without a gradient in a step
     * is not updated and does not count it, so it may differ from the optimizer's step count.
     */
    public static final BufferSpec MUOWN_STEP = new BufferSpec("muown_step", "step", "Muown step count",
            BufferSpec.Shape.SCALAR, BufferSpec.Dtype.WIDE, BufferSpec.Values.FINITE_NON_NEGATIVE, true);

    /** One element of a recipe: a choice that a setting of {@link MuonConfig} made. */
    public interface Element {
        /**
         * The setting that chose this element, as a user writes it, e.g. {@code momentumPrecision = BFLOAT16}.
         *
         * @return the setting and its value
         */
        String setting();

        /**
         * The per-parameter state buffers this element keeps, declared once here: what every binding, the state
         * value and both files iterate over.
         *
         * @return the declarations, none for an element without state
         */
        default List<BufferSpec> buffers() {
            return List.of();
        }
    }

    /** How the momentum buffer is kept ({@link MuonConfig#momentumPrecision()}). */
    public enum Momentum implements Element {
        /** In the parameter's dtype, PyTorch's formula. */
        EMA("momentumPrecision = PARAMETER", MOMENTUM),
        /** Stored in bfloat16, advanced in float32 (float64 for a float64 parameter). */
        EMA_BFLOAT16_STORED("momentumPrecision = BFLOAT16", MOMENTUM_BFLOAT16),
        /**
         * Muown's ({@link MuownConfig}): the EMA of the direction's gradient {@code grad_v} in place of the
         * gradient, in float32 (float64 for a float64 parameter), no Nesterov blend.
         */
        MUOWN_DIRECTION("muown = on", MUOWN_MOMENTUM);

        static {
            TorchNatives.extract();
        }

        private final String setting;
        private final BufferSpec buffer;

        Momentum(String setting, BufferSpec buffer) {
            this.setting = setting;
            this.buffer = buffer;
        }

        @Override
        public String setting() {
            return setting;
        }

        @Override
        public List<BufferSpec> buffers() {
            return List.of(buffer);
        }

        /**
         * The momentum buffer this element keeps.
         *
         * @return its declaration
         */
        public BufferSpec buffer() {
            return buffer;
        }
    }

    /** What turns the update {@code U} into {@code O} ({@link MuonConfig#orthogonalization()}). */
    public enum Orthogonalizer implements Element {
        /** PyTorch's Newton–Schulz iteration. */
        NEWTON_SCHULZ("orthogonalization = NEWTON_SCHULZ"),
        /** The exact polar factor through an SVD, a reference. */
        EXACT_SVD("orthogonalization = EXACT_SVD");

        static {
            TorchNatives.extract();
        }

        private final String setting;

        Orthogonalizer(String setting) {
            this.setting = setting;
        }

        @Override
        public String setting() {
            return setting;
        }
    }

    /** What happens to {@code O} before it is applied ({@link MuonConfig#norMuon()}). */
    public enum RowScaling implements Element {
        /** {@code O} as the orthogonalizer left it. */
        NONE("norMuon = off"),
        /** NorMuon's neuron-wise row scaling with a per-row second moment ({@link NorMuonConfig}). */
        NORMUON("norMuon = on");

        static {
            TorchNatives.extract();
        }

        private final String setting;

        RowScaling(String setting) {
            this.setting = setting;
        }

        @Override
        public String setting() {
            return setting;
        }

        @Override
        public List<BufferSpec> buffers() {
            return this == NORMUON ? List.of(SECOND_MOMENT) : List.of();
        }
    }

    /** How {@code O} changes the parameter ({@link MuonConfig#cautiousWeightDecay()}). */
    public enum Applier implements Element {
        /** {@code p = (1 − lr·weightDecay)·p}, then {@code p −= scaledLr·O}. */
        DECOUPLED_DECAY("cautiousWeightDecay = false"),
        /** The decay only where {@code O ⊙ p >= 0}, then {@code p −= scaledLr·O}. */
        CAUTIOUS_DECAY("cautiousWeightDecay = true"),
        /**
         * Muown: {@code O} moves the direction, Adam the row magnitudes, which the weight decay decays, and the
         * parameter is their product ({@link MuownConfig}).
         */
        MUOWN("muown = on");

        static {
            TorchNatives.extract();
        }

        private final String setting;

        Applier(String setting) {
            this.setting = setting;
        }

        @Override
        public String setting() {
            return setting;
        }

        @Override
        public List<BufferSpec> buffers() {
            return this == MUOWN ? List.of(MUOWN_G, MUOWN_V_NORM, MUOWN_M_G, MUOWN_V_G, MUOWN_STEP) : List.of();
        }
    }

    /**
     * The weight-update hook around the applier, at most one per group as in Emerging-Optimizers'
     * {@code weight_update_hook}: it measures the parameter before its whole update (decay and step), may rescale
     * the update before the applier, and may project the parameter after it. None keeps state across steps. On a
     * parameter cut into unequal row blocks, the blocks' steps are gathered and the hook acts on the whole
     * parameter once.
     */
    public enum WeightHook implements Element {
        /** The applier alone. */
        NONE("weight hook = none"),
        /**
         * Hyperball ({@link HyperballConfig}): the step and the parameter held at a fixed norm, in place of decay;
         * the update rescaled to the radius before the step and the parameter projected back after it.
         */
        HYPERBALL("hyperball = on"),
        /**
         * RadialBrake ({@link RadialBrakeConfig}): after the update, {@code ‖p‖ ← ‖p₀‖ + s·(‖p‖ − ‖p₀‖)}, with
         * {@code s} the outward scale when the norm grew and the inward one otherwise.
         */
        RADIAL_BRAKE("radialBrake = on"),
        /** RelativeUpdate ({@link RelativeUpdateConfig}): {@code O ← (‖p₀‖/‖O‖)·O} before the step. */
        RELATIVE_UPDATE("relativeUpdate = on"),
        /**
         * An update floor over the whole matrix ({@link UpdateFloorConfig}): the step {@code lr'·O} scaled up to
         * at least {@code lr·floor·‖p₀‖}, with {@code lr} the group's lr.
         */
        UPDATE_FLOOR("updateFloor = on (whole matrix)"),
        /** An update floor per output row: each row's step scaled up to at least {@code lr·floor·‖p₀ row‖}. */
        UPDATE_FLOOR_PER_ROW("updateFloor = on (per row)");

        static {
            TorchNatives.extract();
        }

        private final String setting;

        WeightHook(String setting) {
            this.setting = setting;
        }

        @Override
        public String setting() {
            return setting;
        }
    }

    /**
     * Validates.
     *
     * @throws NullPointerException if an element is null
     */
    public UpdateRecipe {
        Objects.requireNonNull(momentum, "momentum must not be null");
        Objects.requireNonNull(orthogonalizer, "orthogonalizer must not be null");
        Objects.requireNonNull(nsPrecision, "nsPrecision must not be null");
        Objects.requireNonNull(nsAlgorithm, "nsAlgorithm must not be null");
        Objects.requireNonNull(nsPreconditioning, "nsPreconditioning must not be null");
        Objects.requireNonNull(rowScaling, "rowScaling must not be null");
        Objects.requireNonNull(applier, "applier must not be null");
        Objects.requireNonNull(weightHook, "weightHook must not be null");
    }

    /**
     * The recipe of a configuration: the one place that reads which variant a config chose (the orthogonalizer's
     * selection, the fused kernels' and same-shape batching ask the recipe too).
     *
     * @param config the configuration
     * @return its recipe
     */
    public static UpdateRecipe of(MuonConfig config) {
        return new UpdateRecipe(
                config.muown() != null ? Momentum.MUOWN_DIRECTION
                        : config.momentumPrecision() == MomentumPrecision.BFLOAT16 ? Momentum.EMA_BFLOAT16_STORED
                        : Momentum.EMA,
                config.orthogonalization() == Orthogonalization.EXACT_SVD ? Orthogonalizer.EXACT_SVD
                        : Orthogonalizer.NEWTON_SCHULZ,
                config.nsPrecision(), config.nsAlgorithm(), config.nsPreconditioning(),
                config.norMuon() != null ? RowScaling.NORMUON : RowScaling.NONE,
                config.muown() != null ? Applier.MUOWN
                        : config.cautiousWeightDecay() ? Applier.CAUTIOUS_DECAY : Applier.DECOUPLED_DECAY,
                weightHook(config));
    }

    /** The config's weight hook: it allows at most one. */
    private static WeightHook weightHook(MuonConfig config) {
        if (config.hyperball() != null) {
            return WeightHook.HYPERBALL;
        }
        if (config.radialBrake() != null) {
            return WeightHook.RADIAL_BRAKE;
        }
        if (config.relativeUpdate() != null) {
            return WeightHook.RELATIVE_UPDATE;
        }
        if (config.updateFloor() != null) {
            return config.updateFloor().perRow() ? WeightHook.UPDATE_FLOOR_PER_ROW : WeightHook.UPDATE_FLOOR;
        }
        return WeightHook.NONE;
    }

    /**
     * The elements in the order they run.
     *
     * @return momentum, orthogonalizer, row scaling, applier, weight hook
     */
    public List<Element> elements() {
        return List.of(momentum, orthogonalizer, rowScaling, applier, weightHook);
    }

    /**
     * Every per-parameter state buffer the elements keep, in the order of the elements.
     *
     * @return the declarations
     */
    public List<BufferSpec> buffers() {
        List<BufferSpec> out = new ArrayList<>();
        elements().forEach(e -> out.addAll(e.buffers()));
        return List.copyOf(out);
    }

    /**
     * The exception a binding throws at build for an element it has no operation for: it names the setting, the
     * binding and why.
     *
     * @param element the element, or the setting's text for a choice that is not an element of its own
     * @param binding the binding, e.g. {@code muon-djl}
     * @param reason  why it has no operation for it
     * @return the exception, to throw
     */
    public static IllegalArgumentException refused(String element, String binding, String reason) {
        return new IllegalArgumentException(element + " is not supported by " + binding + ": " + reason);
    }

    /**
     * {@link #refused(String, String, String)} for an element.
     *
     * @param element the element
     * @param binding the binding
     * @param reason  why
     * @return the exception, to throw
     */
    public static IllegalArgumentException refused(Element element, String binding, String reason) {
        return refused(element.setting(), binding, reason);
    }
}
