package dev.muon;

import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The hyperparameters of one Muon parameter group: an immutable value, validated at construction. The first
 * eight fields and their defaults are those of PyTorch's {@code torch.optim.Muon}.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>lr</td><td>1e-3</td><td>finite, &gt;= 0</td></tr>
 *   <tr><td>weightDecay</td><td>0.1</td><td>finite, &gt;= 0 (decoupled, uses the unadjusted lr)</td></tr>
 *   <tr><td>momentum</td><td>0.95</td><td>in [0, 1)</td></tr>
 *   <tr><td>nesterov</td><td>true</td><td></td></tr>
 *   <tr><td>nsCoefficients</td><td>(3.4445, −4.7750, 2.0315) every step</td>
 *       <td>a per-step schedule's length equals nsSteps</td></tr>
 *   <tr><td>eps</td><td>1e-7</td><td>finite, &gt; 0</td></tr>
 *   <tr><td>nsSteps</td><td>5</td><td>1 to 99</td></tr>
 *   <tr><td>adjustLr</td><td>{@link AdjustLr#ORIGINAL}</td><td></td></tr>
 *   <tr><td>extraScale</td><td>1</td><td>finite, &gt; 0; multiplies the adjusted lr</td></tr>
 *   <tr><td>nsPrecision</td><td>{@link NsPrecision#FLOAT32}</td><td>see {@link NsPrecision}</td></tr>
 *   <tr><td>convWeights</td><td>{@link ConvWeights#REJECT}</td><td></td></tr>
 *   <tr><td>stackedWeights</td><td>{@link StackedWeights#REJECT}</td><td></td></tr>
 *   <tr><td>orthogonalization</td><td>{@link Orthogonalization#NEWTON_SCHULZ}</td><td></td></tr>
 *   <tr><td>nsAlgorithm</td><td>{@link NsAlgorithm#AUTO}</td><td>{@code GEMM} forces the fast paths off</td></tr>
 *   <tr><td>nsPreconditioning</td><td>{@link NsPreconditioning#FROBENIUS}</td><td>{@link #withAol()}: Turbo-Muon's
 *       AOL rescaling with four steps</td></tr>
 *   <tr><td>batchSameShape</td><td>true</td><td>{@code false} forces same-shape batching off
 *       (rule: {@link Muon#BATCH_MAX_SIDE})</td></tr>
 *   <tr><td>norMuon</td><td>null (off)</td><td>{@link NorMuonConfig}: NorMuon's neuron-wise normalization after
 *       Newton–Schulz; its lr rescaling replaces adjustLr's ratio</td></tr>
 *   <tr><td>cautiousWeightDecay</td><td>false</td><td>decay only the coordinates where the update and the parameter
 *       agree in sign (Chen et al., arXiv 2510.12402)</td></tr>
 *   <tr><td>momentumPrecision</td><td>{@link MomentumPrecision#PARAMETER}</td><td>{@link MomentumPrecision#BFLOAT16}
 *       stores the momentum buffer in bfloat16</td></tr>
 *   <tr><td>hyperball</td><td>null (off)</td><td>{@link HyperballConfig}: each parameter held at a fixed norm in
 *       place of weight decay; needs weightDecay 0 and no cautious decay; the lr adjustment has no effect</td></tr>
 *   <tr><td>radialBrake</td><td>null (off)</td><td>{@link RadialBrakeConfig}: a norm increase of each parameter
 *       damped after its update</td></tr>
 *   <tr><td>relativeUpdate</td><td>null (off)</td><td>{@link RelativeUpdateConfig}: the update rescaled to the
 *       parameter's norm; the lr adjustment has no effect</td></tr>
 *   <tr><td>updateFloor</td><td>null (off)</td><td>{@link UpdateFloorConfig}: the step at least a share of the
 *       parameter's norm, whole or per row</td></tr>
 *   <tr><td>muown</td><td>null (off)</td><td>{@link MuownConfig}: each 2-D weight kept as per-row magnitudes
 *       (moved by Adam, decayed by weightDecay) times a direction (moved by Muon); needs nesterov false, no
 *       Hyperball, no cautious decay and momentumPrecision PARAMETER</td></tr>
 * </table>
 * Hyperball, RadialBrake, RelativeUpdate and the update floor are weight-update hooks
 * ({@link UpdateRecipe.WeightHook}): a group has at most one.
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withLr(0.02).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW);
 * }</pre>
 *
 * @param lr                the learning rate
 * @param weightDecay       the decoupled weight decay: {@code p *= 1 − lr·weightDecay}
 * @param momentum          the EMA coefficient μ: {@code buf = μ·buf + (1 − μ)·g}
 * @param nesterov          whether the update is {@code g.lerp(buf, μ)} instead of {@code buf}
 * @param newtonSchulz      the Newton–Schulz settings (schedule, steps, eps, precision, kernel), also read one
 *                          by one under PyTorch's names: {@link #nsCoefficients()}, {@link #nsSteps()},
 *                          {@link #eps()}, {@link #nsPrecision()}, {@link #nsAlgorithm()}
 * @param adjustLr          the shape-dependent lr scaling
 * @param extraScale        an extra factor on the adjusted lr (e.g. to transfer a tuned lr)
 * @param convWeights       what to do with 4-D parameters
 * @param stackedWeights    what to do with 3-D parameters
 * @param orthogonalization Newton–Schulz or the exact SVD reference
 * @param batchSameShape    whether parameters of one shape may be orthogonalized as one batch, under the rule of
 *                          {@link Muon#BATCH_MAX_SIDE}; it changes results only by the rounding of batched against
 *                          single matrix products
 * @param norMuon           NorMuon's settings, or null for plain Muon (the default)
 * @param cautiousWeightDecay whether the decoupled decay applies only where {@code sign(O) = sign(p)}:
 *                          {@code p −= lr·weightDecay·p·[O ⊙ p >= 0]} (Chen et al., arXiv 2510.12402)
 * @param momentumPrecision the dtype the momentum buffer is stored in
 * @param hyperball         Hyperball's settings, or null for weight decay as usual (the default)
 * @param radialBrake       RadialBrake's settings, or null (the default)
 * @param relativeUpdate    RelativeUpdate's settings, or null (the default)
 * @param updateFloor       the update floor's settings, or null (the default)
 * @param muown             Muown's settings, or null for Muon's update of the weights themselves (the default)
 */
public record MuonConfig(double lr, double weightDecay, double momentum, boolean nesterov,
                         NewtonSchulzConfig newtonSchulz, AdjustLr adjustLr, double extraScale,
                         ConvWeights convWeights, StackedWeights stackedWeights, Orthogonalization orthogonalization,
                         boolean batchSameShape, NorMuonConfig norMuon, boolean cautiousWeightDecay,
                         MomentumPrecision momentumPrecision, HyperballConfig hyperball,
                         RadialBrakeConfig radialBrake, RelativeUpdateConfig relativeUpdate,
                         UpdateFloorConfig updateFloor, MuownConfig muown) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public MuonConfig {
        requireNonNegative("lr", lr);
        requireNonNegative("weightDecay", weightDecay);
        requireNonNegative("momentum", momentum);
        if (!(momentum < 1.0)) {
            throw new IllegalArgumentException("momentum must be < 1, got " + momentum);
        }
        Objects.requireNonNull(newtonSchulz, "newtonSchulz must not be null");
        Objects.requireNonNull(adjustLr, "adjustLr must not be null");
        Objects.requireNonNull(convWeights, "convWeights must not be null");
        Objects.requireNonNull(stackedWeights, "stackedWeights must not be null");
        Objects.requireNonNull(orthogonalization, "orthogonalization must not be null");
        Objects.requireNonNull(momentumPrecision, "momentumPrecision must not be null");
        if (!Double.isFinite(extraScale) || !(extraScale > 0)) {
            throw new IllegalArgumentException("extraScale must be a finite number > 0, got " + extraScale);
        }
        if (hyperball != null && weightDecay != 0) {
            throw new IllegalArgumentException("weightDecay must be 0 with hyperball (the sphere replaces weight "
                    + "decay), got " + weightDecay);
        }
        if (hyperball != null && cautiousWeightDecay) {
            throw new IllegalArgumentException("cautiousWeightDecay must be false with hyperball (it is a weight "
                    + "decay, which the sphere replaces), got true");
        }
        List<String> hooks = new ArrayList<>();
        if (hyperball != null) {
            hooks.add("hyperball");
        }
        if (radialBrake != null) {
            hooks.add("radialBrake");
        }
        if (relativeUpdate != null) {
            hooks.add("relativeUpdate");
        }
        if (updateFloor != null) {
            hooks.add("updateFloor");
        }
        if (hooks.size() > 1) {
            throw new IllegalArgumentException("a Muon group has at most one weight-update hook (hyperball, "
                    + "radialBrake, relativeUpdate, updateFloor), as Emerging-Optimizers' weight_update_hook; got "
                    + String.join(" and ", hooks));
        }
        if (muown != null) {
            requireMuownComposes(nesterov, cautiousWeightDecay, momentumPrecision, hyperball, hooks);
        }
    }

    /** What Muown does not compose with, each refused naming the field, the rule, the value and why. */
    private static void requireMuownComposes(boolean nesterov, boolean cautiousWeightDecay,
                                             MomentumPrecision momentumPrecision, HyperballConfig hyperball,
                                             List<String> hooks) {
        if (nesterov) {
            throw new IllegalArgumentException("nesterov must be false with muown (Muown's reference has no Nesterov "
                    + "blend; set withNesterov(false) first), got true");
        }
        if (hyperball != null) {
            throw new IllegalArgumentException("hyperball must be off with muown (both decide how the weights' norms "
                    + "move: the sphere fixes the norm Muown learns per row), got " + hyperball);
        }
        if (!hooks.isEmpty()) {
            throw new IllegalArgumentException(hooks.get(0) + " must be off with muown (a weight-update hook changes "
                    + "the weight's norm or step, which Muown keeps as its per-row magnitudes and direction: its "
                    + "next step would undo the hook), got on");
        }
        if (cautiousWeightDecay) {
            throw new IllegalArgumentException("cautiousWeightDecay must be false with muown (Muown decays the row "
                    + "magnitudes, which have no update to agree in sign with), got true");
        }
        if (momentumPrecision != MomentumPrecision.PARAMETER) {
            throw new IllegalArgumentException("momentumPrecision must be PARAMETER with muown (Muown keeps its "
                    + "momentum in float32, float64 for a float64 parameter), got " + momentumPrecision);
        }
    }

    /**
     * Every field but {@code norMuon}, which is off, and the update variants, which are off.
     *
     * @param lr                the learning rate
     * @param weightDecay       the decoupled weight decay
     * @param momentum          the EMA coefficient
     * @param nesterov          whether to use Nesterov
     * @param newtonSchulz      the Newton–Schulz settings
     * @param adjustLr          the shape-dependent lr scaling
     * @param extraScale        an extra factor on the adjusted lr
     * @param convWeights       what to do with 4-D parameters
     * @param stackedWeights    what to do with 3-D parameters
     * @param orthogonalization Newton–Schulz or the exact SVD reference
     * @param batchSameShape    whether same-shape batching is allowed
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public MuonConfig(double lr, double weightDecay, double momentum, boolean nesterov,
                      NewtonSchulzConfig newtonSchulz, AdjustLr adjustLr, double extraScale,
                      ConvWeights convWeights, StackedWeights stackedWeights, Orthogonalization orthogonalization,
                      boolean batchSameShape) {
        this(lr, weightDecay, momentum, nesterov, newtonSchulz, adjustLr, extraScale, convWeights, stackedWeights,
                orthogonalization, batchSameShape, null, false, MomentumPrecision.PARAMETER, null, null, null, null,
                null);
    }

    /**
     * Every field one by one, in PyTorch's order, NorMuon and the update variants off; the Newton–Schulz fields
     * are validated by {@link NewtonSchulzConfig}.
     *
     * @param lr                the learning rate
     * @param weightDecay       the decoupled weight decay
     * @param momentum          the EMA coefficient
     * @param nesterov          whether to use Nesterov
     * @param nsCoefficients    the Newton–Schulz polynomial schedule
     * @param eps               the floor of the update's Frobenius norm
     * @param nsSteps           the number of Newton–Schulz steps
     * @param adjustLr          the shape-dependent lr scaling
     * @param extraScale        an extra factor on the adjusted lr
     * @param nsPrecision       the dtype of the Newton–Schulz iterations
     * @param convWeights       what to do with 4-D parameters
     * @param stackedWeights    what to do with 3-D parameters
     * @param orthogonalization Newton–Schulz or the exact SVD reference
     * @param nsAlgorithm       the Newton–Schulz kernel choice
     * @param batchSameShape    whether same-shape batching is allowed
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public MuonConfig(double lr, double weightDecay, double momentum, boolean nesterov,
                      CoefficientSchedule nsCoefficients, double eps, int nsSteps, AdjustLr adjustLr,
                      double extraScale, NsPrecision nsPrecision, ConvWeights convWeights,
                      StackedWeights stackedWeights, Orthogonalization orthogonalization, NsAlgorithm nsAlgorithm,
                      boolean batchSameShape) {
        this(lr, weightDecay, momentum, nesterov,
                new NewtonSchulzConfig(nsCoefficients, nsSteps, eps, nsPrecision, nsAlgorithm), adjustLr, extraScale,
                convWeights, stackedWeights, orthogonalization, batchSameShape, null, false,
                MomentumPrecision.PARAMETER, null, null, null, null, null);
    }

    /**
     * PyTorch's defaults (see the table above).
     *
     * @return the default configuration
     */
    public static MuonConfig defaults() {
        return new MuonConfig(1e-3, 0.1, 0.95, true, NewtonSchulzConfig.defaults(), AdjustLr.ORIGINAL, 1.0,
                ConvWeights.REJECT, StackedWeights.REJECT, Orthogonalization.NEWTON_SCHULZ, true);
    }

    /**
     * The Muon group of a hybrid that replaces AdamW in one line (muon-core's {@code MuonAdamW.dropIn}, muon-djl's
     * {@code MuonAdamW} without {@code optMuon}): AdamW's lr and weight decay carry over, because the updates are
     * scaled to AdamW's RMS ({@link AdjustLr#MATCH_RMS_ADAMW}, Moonlight's rule), and conv filters are flattened
     * ({@link ConvWeights#FLATTEN}), since the hybrid's rules send them to Muon.
     *
     * @param lr          the lr of the AdamW being replaced
     * @param weightDecay its weight decay
     * @return the Muon group's config
     * @throws IllegalArgumentException if a value is invalid, as {@link #withLr} and {@link #withWeightDecay} say
     */
    public static MuonConfig dropIn(double lr, double weightDecay) {
        // Two numbers, not an AdamWConfig: this value must not reach AdamWConfig's conversion from libtorch's options.
        return defaults().withLr(lr).withWeightDecay(weightDecay).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW)
                .withConvWeights(ConvWeights.FLATTEN);
    }

    /**
     * The Newton–Schulz polynomial schedule ({@code ns_coefficients}).
     *
     * @return {@code newtonSchulz().nsCoefficients()}
     */
    public CoefficientSchedule nsCoefficients() {
        return newtonSchulz.nsCoefficients();
    }

    /**
     * The floor of the update's Frobenius norm in the normalisation.
     *
     * @return {@code newtonSchulz().eps()}
     */
    public double eps() {
        return newtonSchulz.eps();
    }

    /**
     * The number of Newton–Schulz steps ({@code ns_steps}).
     *
     * @return {@code newtonSchulz().nsSteps()}
     */
    public int nsSteps() {
        return newtonSchulz.nsSteps();
    }

    /**
     * The dtype of the Newton–Schulz iterations.
     *
     * @return {@code newtonSchulz().nsPrecision()}
     */
    public NsPrecision nsPrecision() {
        return newtonSchulz.nsPrecision();
    }

    /**
     * The Newton–Schulz kernel choice.
     *
     * @return {@code newtonSchulz().nsAlgorithm()}
     */
    public NsAlgorithm nsAlgorithm() {
        return newtonSchulz.nsAlgorithm();
    }

    /**
     * How the Newton–Schulz input is brought under spectral norm 1.
     *
     * @return {@code newtonSchulz().nsPreconditioning()}
     */
    public NsPreconditioning nsPreconditioning() {
        return newtonSchulz.nsPreconditioning();
    }

    /**
     * The lr that the update of a {@code rows × cols} matrix uses: {@code lr · adjustLr.ratio(rows, cols) ·
     * extraScale}, multiplied in that order (the reference forms {@code lr·ratio} first). With NorMuon it is
     * {@code lr · 0.2 · extraScale}, the factor on NorMuon's unit-RMS update: the paper's rescaling takes the
     * ratio's place. With Hyperball or RelativeUpdate it is {@code lr}: the update is rescaled to a norm of its own,
     * so no adjustment applies.
     *
     * @param rows the matrix's rows
     * @param cols the matrix's columns
     * @return the scaled lr
     */
    public double scaledLr(long rows, long cols) {
        if (hyperball != null || relativeUpdate != null) {
            return lr;
        }
        if (norMuon != null) {
            return lr * NorMuonConfig.UPDATE_RMS * extraScale;
        }
        return lr * adjustLr.ratio(rows, cols) * extraScale;
    }

    /**
     * The fields that may change while an optimizer runs (a schedule's lr, a restore's values); every other field
     * decided how the optimizer was built.
     *
     * @return lr, weight decay, momentum, Nesterov, the lr adjustment and the extra scale
     */
    public MuonHyperparameters hyperparameters() {
        return new MuonHyperparameters(lr, weightDecay, momentum, nesterov, adjustLr, extraScale);
    }

    /**
     * A copy with other hyperparameters and this config's build settings.
     *
     * @param value the hyperparameters
     * @return the copy
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public MuonConfig withHyperparameters(MuonHyperparameters value) {
        Objects.requireNonNull(value, "hyperparameters must not be null");
        return copy(d -> {
            d.lr = value.lr();
            d.weightDecay = value.weightDecay();
            d.momentum = value.momentum();
            d.nesterov = value.nesterov();
            d.adjustLr = value.adjustLr();
            d.extraScale = value.extraScale();
        });
    }

    /**
     * A copy with another learning rate.
     *
     * @param value the lr
     * @return the copy
     */
    public MuonConfig withLr(double value) {
        return copy(d -> d.lr = value);
    }

    /**
     * A copy with another weight decay.
     *
     * @param value the weight decay
     * @return the copy
     */
    public MuonConfig withWeightDecay(double value) {
        return copy(d -> d.weightDecay = value);
    }

    /**
     * A copy with another momentum.
     *
     * @param value the momentum
     * @return the copy
     */
    public MuonConfig withMomentum(double value) {
        return copy(d -> d.momentum = value);
    }

    /**
     * A copy with Nesterov on or off.
     *
     * @param value whether to use Nesterov
     * @return the copy
     */
    public MuonConfig withNesterov(boolean value) {
        return copy(d -> d.nesterov = value);
    }

    /**
     * A copy with another coefficient schedule; a per-step schedule also sets {@code nsSteps} to its length.
     *
     * @param schedule the schedule
     * @return the copy
     */
    public MuonConfig withNsCoefficients(CoefficientSchedule schedule) {
        Objects.requireNonNull(schedule, "nsCoefficients must not be null");
        return copy(d -> {
            d.nsCoefficients = schedule;
            d.nsSteps = schedule.fixedLength().orElse(d.nsSteps);
        });
    }

    /**
     * A copy with another norm floor.
     *
     * @param value eps
     * @return the copy
     */
    public MuonConfig withEps(double value) {
        return copy(d -> d.eps = value);
    }

    /**
     * A copy with another number of Newton–Schulz steps.
     *
     * @param value the step count
     * @return the copy
     */
    public MuonConfig withNsSteps(int value) {
        return copy(d -> d.nsSteps = value);
    }

    /**
     * A copy with another lr adjustment.
     *
     * @param value the adjustment
     * @return the copy
     */
    public MuonConfig withAdjustLr(AdjustLr value) {
        return copy(d -> d.adjustLr = value);
    }

    /**
     * A copy with another extra lr factor.
     *
     * @param value the factor
     * @return the copy
     */
    public MuonConfig withExtraScale(double value) {
        return copy(d -> d.extraScale = value);
    }

    /**
     * A copy with another Newton–Schulz precision.
     *
     * @param value the precision
     * @return the copy
     */
    public MuonConfig withNsPrecision(NsPrecision value) {
        return copy(d -> d.nsPrecision = value);
    }

    /**
     * A copy with another policy for 4-D parameters.
     *
     * @param value the policy
     * @return the copy
     */
    public MuonConfig withConvWeights(ConvWeights value) {
        return copy(d -> d.convWeights = value);
    }

    /**
     * A copy with another policy for 3-D parameters.
     *
     * @param value the policy
     * @return the copy
     */
    public MuonConfig withStackedWeights(StackedWeights value) {
        return copy(d -> d.stackedWeights = value);
    }

    /**
     * A copy with another orthogonalization.
     *
     * @param value the orthogonalization
     * @return the copy
     */
    public MuonConfig withOrthogonalization(Orthogonalization value) {
        return copy(d -> d.orthogonalization = value);
    }

    /**
     * A copy with another Newton–Schulz kernel choice.
     *
     * @param value the kernel choice
     * @return the copy
     */
    public MuonConfig withNsAlgorithm(NsAlgorithm value) {
        return copy(d -> d.nsAlgorithm = value);
    }

    /**
     * A copy with another Newton–Schulz preconditioning; {@link #withAol()} sets AOL with the schedule it is
     * meant for.
     *
     * @param value the preconditioning
     * @return the copy
     * @throws NullPointerException if {@code value} is null
     */
    public MuonConfig withNsPreconditioning(NsPreconditioning value) {
        Objects.requireNonNull(value, "nsPreconditioning must not be null");
        return copy(d -> d.nsPreconditioning = value);
    }

    /**
     * A copy with Turbo-Muon's Newton–Schulz: AOL preconditioning ({@link NsPreconditioning#AOL}), four steps and
     * its four triples ({@link CoefficientSchedule#turboMuon4()}); the precision and kernel choice are kept.
     *
     * @return the copy
     */
    public MuonConfig withAol() {
        return copy(d -> {
            d.nsPreconditioning = NsPreconditioning.AOL;
            d.nsCoefficients = CoefficientSchedule.turboMuon4();
            d.nsSteps = 4;
        });
    }

    /**
     * A copy with same-shape batching allowed or forced off. Batching runs the Newton–Schulz iterations of
     * parameters that share a small matrix shape as one batch (the rule is at {@link Muon#BATCH_MAX_SIDE}); off,
     * every parameter runs its own iteration, as the golden reference does.
     *
     * @param value whether to batch
     * @return the copy
     */
    public MuonConfig withBatchSameShape(boolean value) {
        return copy(d -> d.batchSameShape = value);
    }

    /**
     * A copy with NorMuon's neuron-wise normalization on (Li et al., arXiv 2510.05491, Algorithm 1): after
     * Newton–Schulz each output row is divided by the root of its running second moment, and the update is
     * rescaled to RMS 0.2 in place of {@link #adjustLr()}'s ratio (see {@link NorMuonConfig}).
     *
     * @param value the settings, or null to turn NorMuon off
     * @return the copy
     */
    public MuonConfig withNorMuon(NorMuonConfig value) {
        return copy(d -> d.norMuon = value);
    }

    /**
     * A copy with NorMuon on, from its two settings.
     *
     * @param beta2 the decay of the per-row second moment, in [0, 1)
     * @param eps   added to the root of the second moment, finite and &gt; 0
     * @return the copy
     * @throws IllegalArgumentException naming the setting, the rule and the value
     */
    public MuonConfig withNorMuon(double beta2, double eps) {
        return withNorMuon(new NorMuonConfig(beta2, eps));
    }

    /**
     * A copy with cautious weight decay on or off: the decoupled decay applies only to the coordinates where the
     * orthogonalized update {@code O} and the parameter agree in sign, {@code p −= lr·weightDecay·p·[O ⊙ p >= 0]}
     * (Chen et al., arXiv 2510.12402; Dion's {@code cautious_wd}).
     *
     * @param value whether it is on
     * @return the copy
     */
    public MuonConfig withCautiousWeightDecay(boolean value) {
        return copy(d -> d.cautiousWeightDecay = value);
    }

    /**
     * A copy that stores the momentum buffer in another dtype (see {@link MomentumPrecision}).
     *
     * @param value the precision
     * @return the copy
     * @throws NullPointerException if {@code value} is null
     */
    public MuonConfig withMomentumPrecision(MomentumPrecision value) {
        Objects.requireNonNull(value, "momentumPrecision must not be null");
        return copy(d -> d.momentumPrecision = value);
    }

    /**
     * A copy with Hyperball on or off: each parameter and its update held at a fixed Frobenius norm in place of
     * weight decay (see {@link HyperballConfig}); set {@code withWeightDecay(0)} first.
     *
     * @param value the settings, or null to turn Hyperball off
     * @return the copy
     * @throws IllegalArgumentException if weight decay is not 0 or cautious weight decay is on
     */
    public MuonConfig withHyperball(HyperballConfig value) {
        return copy(d -> d.hyperball = value);
    }

    /**
     * A copy with RadialBrake on or off (see {@link RadialBrakeConfig}).
     *
     * @param value the settings, or null to turn it off
     * @return the copy
     * @throws IllegalArgumentException if another weight-update hook is on
     */
    public MuonConfig withRadialBrake(RadialBrakeConfig value) {
        return copy(d -> d.radialBrake = value);
    }

    /**
     * A copy with RelativeUpdate on or off (see {@link RelativeUpdateConfig}).
     *
     * @param value the settings, or null to turn it off
     * @return the copy
     * @throws IllegalArgumentException if another weight-update hook is on
     */
    public MuonConfig withRelativeUpdate(RelativeUpdateConfig value) {
        return copy(d -> d.relativeUpdate = value);
    }

    /**
     * A copy with an update floor on or off (see {@link UpdateFloorConfig}).
     *
     * @param value the settings, or null to turn it off
     * @return the copy
     * @throws IllegalArgumentException if another weight-update hook is on
     */
    public MuonConfig withUpdateFloor(UpdateFloorConfig value) {
        return copy(d -> d.updateFloor = value);
    }

    /**
     * A copy with Muown on or off: each 2-D weight kept as per-row magnitudes, moved by Adam and decayed by the
     * weight decay, times a direction, moved by Muon (see {@link MuownConfig}); set {@code withNesterov(false)}
     * first.
     *
     * @param value the settings, or null to turn Muown off
     * @return the copy
     * @throws IllegalArgumentException if Nesterov, Hyperball or cautious weight decay is on, or the momentum is
     *                                  stored in bfloat16
     */
    public MuonConfig withMuown(MuownConfig value) {
        return copy(d -> d.muown = value);
    }

    /** The one copy helper: a wither changes fields of a draft of this config, and the draft is validated anew. */
    private MuonConfig copy(Consumer<Draft> change) {
        Draft draft = new Draft(this);
        change.accept(draft);
        return draft.build();
    }

    /**
     * Every field of a {@link MuonConfig} as a mutable value, the Newton–Schulz ones one by one, for the withers;
     * {@link #build()} validates. Adding a field to the config means adding it here; files and the fit check
     * read the record's fields themselves ({@code dev.muon.state.ConfigFields}).
     */
    static final class Draft {
        double lr;
        double weightDecay;
        double momentum;
        boolean nesterov;
        CoefficientSchedule nsCoefficients;
        double eps;
        int nsSteps;
        AdjustLr adjustLr;
        double extraScale;
        NsPrecision nsPrecision;
        ConvWeights convWeights;
        StackedWeights stackedWeights;
        Orthogonalization orthogonalization;
        NsAlgorithm nsAlgorithm;
        NsPreconditioning nsPreconditioning;
        boolean batchSameShape;
        NorMuonConfig norMuon;
        boolean cautiousWeightDecay;
        MomentumPrecision momentumPrecision;
        HyperballConfig hyperball;
        RadialBrakeConfig radialBrake;
        RelativeUpdateConfig relativeUpdate;
        UpdateFloorConfig updateFloor;
        MuownConfig muown;

        Draft(MuonConfig c) {
            lr = c.lr;
            weightDecay = c.weightDecay;
            momentum = c.momentum;
            nesterov = c.nesterov;
            nsCoefficients = c.nsCoefficients();
            eps = c.eps();
            nsSteps = c.nsSteps();
            adjustLr = c.adjustLr;
            extraScale = c.extraScale;
            nsPrecision = c.nsPrecision();
            convWeights = c.convWeights;
            stackedWeights = c.stackedWeights;
            orthogonalization = c.orthogonalization;
            nsAlgorithm = c.nsAlgorithm();
            nsPreconditioning = c.nsPreconditioning();
            batchSameShape = c.batchSameShape;
            norMuon = c.norMuon;
            cautiousWeightDecay = c.cautiousWeightDecay;
            momentumPrecision = c.momentumPrecision;
            hyperball = c.hyperball;
            radialBrake = c.radialBrake;
            relativeUpdate = c.relativeUpdate;
            updateFloor = c.updateFloor;
            muown = c.muown;
        }

        MuonConfig build() {
            return new MuonConfig(lr, weightDecay, momentum, nesterov,
                    new NewtonSchulzConfig(nsCoefficients, nsSteps, eps, nsPrecision, nsAlgorithm,
                            nsPreconditioning), adjustLr, extraScale, convWeights, stackedWeights, orthogonalization, batchSameShape, norMuon,
                    cautiousWeightDecay, momentumPrecision, hyperball, radialBrake, relativeUpdate, updateFloor, muown);
        }
    }

    private static void requireNonNegative(String field, double value) {
        if (!Double.isFinite(value)) {
            throw new IllegalArgumentException(field + " must be finite, got " + value);
        }
        if (!(value >= 0)) {
            throw new IllegalArgumentException(field + " must be >= 0, got " + value);
        }
    }
}
