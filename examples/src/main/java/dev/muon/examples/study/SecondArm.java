package dev.muon.examples.study;

import dev.muon.AdjustLr;
import dev.muon.HyperballConfig;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RadialBrakeConfig;
import dev.muon.RelativeUpdateConfig;
import dev.muon.UpdateFloorConfig;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The arms of the second study (docs/examples.md, "The second study: protocol"): libtorch's AdamW, AdamW with an
 * lr of its own for the hidden matrices ({@link #ADAMW_2LR}, the control that separates "two lrs" from "Muon"),
 * {@code MuonAdamW}, and ten variants of {@code MuonAdamW}, each one change to its Muon side.
 */
enum SecondArm {
    /** libtorch's {@code AdamW} on every parameter. */
    ADAMW("AdamW"),
    /** libtorch's {@code AdamW} with the hidden matrices in a group of their own, at their own lr. */
    ADAMW_2LR("AdamW-2lr"),
    /** {@code MuonAdamW}: the first study's Muon side. */
    MUON("MuonAdamW"),
    /** NorMuon's neuron-wise normalization. */
    NORMUON("NorMuon"),
    /** Cautious weight decay. */
    CAUTIOUS_WD("cautious WD"),
    /** The momentum buffer in bfloat16. */
    BF16_MOMENTUM("bf16 momentum"),
    /** Hyperball at a swept radius, weight decay 0. */
    HYPERBALL("Hyperball"),
    /** Muown, which needs Nesterov off. */
    MUOWN("Muown"),
    /** RadialBrake's defaults. */
    RADIAL_BRAKE("RadialBrake"),
    /** RelativeUpdate: the lr is the step's size relative to the weight. */
    RELATIVE_UPDATE("RelativeUpdate"),
    /** An update floor of 0.35 on the whole matrix. */
    UPDATE_FLOOR("update floor"),
    /** Turbo-Muon's AOL-preconditioned Newton–Schulz. */
    AOL("AOL"),
    /** The EMA-Nesterov lookahead wrapper around {@code MuonAdamW}. */
    EMA_NESTEROV("EMA-Nesterov");

    /** The ten variants, in the protocol's order. */
    static final List<SecondArm> VARIANTS = Arrays.stream(values()).filter(SecondArm::variant).toList();

    private final String label;

    SecondArm(String label) {
        this.label = label;
    }

    /** The name in tables. */
    String label() {
        return label;
    }

    /** Whether the arm has a Muon side. */
    boolean muon() {
        return this != ADAMW && this != ADAMW_2LR;
    }

    /** Whether the arm is a variant of {@code MuonAdamW}. */
    boolean variant() {
        return muon() && this != MUON;
    }

    /** The lower-case name the command line and the CSV use. */
    String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The arm of a CSV's {@code optimizer} column.
     *
     * @param id such as {@code ema_nesterov}
     * @return the arm
     * @throws IllegalArgumentException naming the value and the arms, if it is none of them
     */
    static SecondArm of(String id) {
        for (SecondArm arm : values()) {
            if (arm.id().equals(id)) {
                return arm;
            }
        }
        throw new IllegalArgumentException("optimizer must be one of " + Arrays.stream(values()).map(SecondArm::id)
                .toList() + ", got '" + id + "'");
    }

    /**
     * A variant's lr grid as factors of {@code MuonAdamW}'s tuned Muon lr: {2, 4, 8} for the arms whose lr is a
     * step relative to the weight (Hyperball's angle, RelativeUpdate's ratio; Muon's RMS-matched step turns a
     * 128-wide matrix of libtorch's initialisation by about 4 times its lr), {1/2, 1, 2} for the others.
     *
     * @return the factors, ascending, a factor 2 apart
     * @throws IllegalStateException for an arm that is not a variant
     */
    List<Double> lrFactors() {
        if (!variant()) {
            throw new IllegalStateException(id() + " is not a variant: its lr grid is the protocol's own");
        }
        return this == HYPERBALL || this == RELATIVE_UPDATE ? List.of(2.0, 4.0, 8.0) : List.of(0.5, 1.0, 2.0);
    }

    /**
     * The Muon side of a Muon arm: PyTorch's Muon defaults with {@code MATCH_RMS_ADAMW}, the lr and weight decay
     * given, and the arm's one change. {@link #EMA_NESTEROV} changes nothing here: its change is the wrapper.
     *
     * @param lr          the Muon lr
     * @param weightDecay the weight decay (Hyperball replaces it with 0)
     * @param radius      Hyperball's radius (0: each matrix's own norm); ignored by the other arms
     * @return the config
     * @throws IllegalStateException for an arm without a Muon side
     */
    MuonConfig muonConfig(double lr, double weightDecay, double radius) {
        MuonConfig base = MuonConfig.defaults().withLr(lr).withWeightDecay(weightDecay)
                .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW);
        return switch (this) {
            case ADAMW, ADAMW_2LR -> throw new IllegalStateException(id() + " has no Muon side");
            case MUON, EMA_NESTEROV -> base;
            case NORMUON -> base.withNorMuon(NorMuonConfig.defaults());
            case CAUTIOUS_WD -> base.withCautiousWeightDecay(true);
            case BF16_MOMENTUM -> base.withMomentumPrecision(MomentumPrecision.BFLOAT16);
            case HYPERBALL -> base.withWeightDecay(0).withHyperball(new HyperballConfig(radius, 1e-8));
            case MUOWN -> base.withNesterov(false).withMuown(MuownConfig.defaults());
            case RADIAL_BRAKE -> base.withRadialBrake(RadialBrakeConfig.defaults());
            case RELATIVE_UPDATE -> base.withRelativeUpdate(RelativeUpdateConfig.defaults());
            case UPDATE_FLOOR -> base.withUpdateFloor(UpdateFloorConfig.defaults());
            case AOL -> base.withAol();
        };
    }
}
