package dev.muon;

import dev.muon.internal.TorchNatives;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the last {@link MuonAdamW#step()} did: whether it was applied or skipped for a non-finite gradient, and,
 * when metrics are on, per-group measurements.
 *
 * @param step                the optimizer's step count after the call (unchanged by a skipped step)
 * @param skipped             whether the step changed nothing: skipped under {@link NonFinitePolicy#SKIP} for a
 *                            non-finite gradient, or no parameter had a gradient
 * @param nonFiniteParameter  the first parameter whose gradient held NaN or ±Inf, if any was found
 * @param groups              per-group metrics (Muon first, then AdamW); empty when metrics are off or skipped
 * @param orthogonalityError  {@code ‖OᵀO − I‖_F} (the smaller Gram matrix) of the Newton–Schulz output of each
 *                            parameter chosen with {@link MuonAdamW.Builder#orthogonalityErrorFor}
 */
public record StepReport(long step, boolean skipped, Optional<String> nonFiniteParameter,
                         List<GroupMetrics> groups, Map<String, Double> orthogonalityError) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Copies the collections.
     *
     * @throws NullPointerException if a reference is null
     */
    public StepReport {
        groups = List.copyOf(groups);
        orthogonalityError = Map.copyOf(orthogonalityError);
    }
}
