package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of an update floor, a weight-update hook: the update per unit of lr is never smaller than a share of
 * the parameter's norm, over the whole matrix or per output row (modded-nanogpt's optimization track: a floor of
 * 0.35 on {@code ‖u‖/‖w‖} in record #9, where the step is {@code lr·u}; per output row in record #46). So the step
 * is at least {@code lr·floor·‖p‖}: it follows the lr and its schedule, and a zero lr still takes no step. An
 * immutable value, validated at construction; turned on for a Muon group by
 * {@link MuonConfig#withUpdateFloor(UpdateFloorConfig)}, off by default.
 * <pre>
 *   Δ = lr'·O, the step the applier subtracts
 *        (lr' the adjusted lr, {@link MuonConfig#scaledLr}; lr the group's lr)
 *   whole matrix:  Δ ← Δ · max(1, lr·floor·‖p‖_F / max(‖Δ‖_F, eps))
 *   per row i:     Δᵢ ← Δᵢ · max(1, lr·floor·‖pᵢ‖ / max(‖Δᵢ‖, eps))
 *   p = (1 − lr·weightDecay)·p − Δ            (or cautious decay)
 * </pre>
 * {@code p} is the parameter before the update; rows are a matrix's rows (a conv filter's output channels, each
 * matrix's rows in a stack). The record's {@code u} is {@code Δ/lr}: it carries the lr's shape adjustment, as the
 * record's update carries its shape factor. The norms are taken in float32 (float64 for a float64 parameter) on the parameter's
 * device; a factor is clamped to the finite range of the parameter's dtype.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>floor</td><td>0.35 (record #9)</td><td>finite, &gt; 0</td></tr>
 *   <tr><td>perRow</td><td>false</td><td></td></tr>
 *   <tr><td>eps</td><td>1e-12</td><td>finite, &gt; 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withUpdateFloor(UpdateFloorConfig.defaults().withPerRow(true));
 * }</pre>
 *
 * @param floor  the least ratio of the step's norm, per unit of lr, to the parameter's
 * @param perRow whether the floor holds for each output row instead of the whole matrix
 * @param eps    the floor of the step's norm in the division
 */
public record UpdateFloorConfig(double floor, boolean perRow, double eps) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public UpdateFloorConfig {
        if (!Double.isFinite(floor) || !(floor > 0)) {
            throw new IllegalArgumentException("updateFloor floor must be a finite number > 0, got " + floor);
        }
        if (!Double.isFinite(eps) || !(eps > 0)) {
            throw new IllegalArgumentException("updateFloor eps must be a finite number > 0, got " + eps);
        }
    }

    /**
     * The defaults: a floor of 0.35 over the whole matrix (modded-nanogpt's record #9), eps 1e-12.
     *
     * @return the default settings
     */
    public static UpdateFloorConfig defaults() {
        return new UpdateFloorConfig(0.35, false, 1e-12);
    }

    /**
     * A copy with the floor per output row or over the whole matrix.
     *
     * @param value true for per row
     * @return the copy
     */
    public UpdateFloorConfig withPerRow(boolean value) {
        return new UpdateFloorConfig(floor, value, eps);
    }
}
