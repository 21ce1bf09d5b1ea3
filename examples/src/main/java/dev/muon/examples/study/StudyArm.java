package dev.muon.examples.study;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.HyperballConfig;
import dev.muon.MomentumPrecision;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.examples.CharTransformer;
import dev.muon.examples.TinyGpt;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;

/**
 * The optimizers {@link MuonStudy} compares: libtorch's {@code AdamW}, {@code MuonAdamW} (Muon on the hidden
 * matrices with its lr in AdamW's units through {@link AdjustLr#MATCH_RMS_ADAMW}, libtorch's AdamW on the rest),
 * and four variants of {@code MuonAdamW} that each change one thing of its Muon side.
 */
enum StudyArm {
    /** libtorch's {@code AdamW} on every parameter. */
    ADAMW("AdamW"),
    /** {@code MuonAdamW}: Muon at its own lr (RMS-matched to AdamW's), AdamW at AdamW's. */
    MUON("MuonAdamW"),
    /** {@code MuonAdamW} with NorMuon's neuron-wise normalization ({@code withNorMuon(NorMuonConfig.defaults())}). */
    NORMUON("NorMuon"),
    /** {@code MuonAdamW} with cautious weight decay ({@code withCautiousWeightDecay(true)}). */
    CAUTIOUS_WD("cautious WD"),
    /** {@code MuonAdamW} with the momentum buffer stored in bfloat16. */
    BF16_MOMENTUM("bf16 momentum"),
    /** {@code MuonAdamW} with Hyperball in place of Muon's weight decay ({@code withWeightDecay(0)}). */
    HYPERBALL("Hyperball");

    private final String label;

    StudyArm(String label) {
        this.label = label;
    }

    /** The name in tables and figures. */
    String label() {
        return label;
    }

    /** Whether the arm has a Muon side (and so a Muon lr). */
    boolean muon() {
        return this != ADAMW;
    }

    /** Whether the arm is a variant of {@code MuonAdamW}, run at the best lrs only. */
    boolean variant() {
        return this != ADAMW && this != MUON;
    }

    /** The lower-case name the command line and the CSV use, such as {@code cautious_wd}. */
    String id() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * The arm of a CSV's {@code optimizer} column.
     *
     * @param id such as {@code muon}
     * @return the arm
     * @throws IllegalArgumentException naming the value and the arms, if it is none of them
     */
    static StudyArm of(String id) {
        for (StudyArm arm : values()) {
            if (arm.id().equals(id)) {
                return arm;
            }
        }
        throw new IllegalArgumentException("optimizer must be one of " + java.util.Arrays.stream(values())
                .map(StudyArm::id).toList() + ", got '" + id + "'");
    }

    /**
     * The Muon side's settings of a Muon arm: PyTorch's Muon defaults (momentum 0.95, Nesterov, 5 quintic
     * Newton–Schulz steps) with {@code MATCH_RMS_ADAMW}, the lr and weight decay given, and the arm's one change.
     *
     * @param lr          the Muon lr
     * @param weightDecay the weight decay (Hyperball replaces it with 0)
     * @return the config
     * @throws IllegalStateException for {@link #ADAMW}, which has no Muon side
     */
    MuonConfig muonConfig(double lr, double weightDecay) {
        MuonConfig base = MuonConfig.defaults().withLr(lr).withWeightDecay(weightDecay)
                .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW);
        return switch (this) {
            case ADAMW -> throw new IllegalStateException("AdamW has no Muon side");
            case MUON -> base;
            case NORMUON -> base.withNorMuon(NorMuonConfig.defaults());
            case CAUTIOUS_WD -> base.withCautiousWeightDecay(true);
            case BF16_MOMENTUM -> base.withMomentumPrecision(MomentumPrecision.BFLOAT16);
            case HYPERBALL -> base.withWeightDecay(0).withHyperball(HyperballConfig.defaults());
        };
    }

    /**
     * Builds the arm's optimizer for a model.
     *
     * @param model the model
     * @param cell  the lrs and weight decay
     * @return how to clear gradients and step
     */
    TinyGpt.Stepper build(CharTransformer model, StudyCell cell) {
        if (this == ADAMW) {
            AdamWOptions options = new AdamWOptions(cell.adamwLr());
            options.weight_decay().put(cell.weightDecay());
            AdamW adamW = new AdamW(model.parameters(), options);
            return new TinyGpt.Stepper(adamW::zero_grad, adamW::step);
        }
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                .adamW(AdamWConfig.defaults().withLr(cell.adamwLr()).withWeightDecay(cell.weightDecay()))
                .muon(muonConfig(cell.muonLr(), cell.weightDecay())).build();
        return new TinyGpt.Stepper(optimizer::zero_grad, optimizer::step);
    }
}
