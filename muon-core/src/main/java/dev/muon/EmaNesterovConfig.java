package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of {@link EmaNesterov}, the EMA-Nesterov lookahead wrapper (Yau, Li, Glentis, Boreiko, Wai and Hong,
 * 2026, arXiv 2605.25395). With {@code t} the number of completed steps:
 * <pre>
 *   β_t = lookahead · lr_t / lr_0   (scaleByLr; else β_t = lookahead),   β_t = 0 outside prefillSteps &lt;= t &lt; restStep
 *   θ_{t+1} = A_t(θ_t + β_t · m_t)
 *   m_{t+1} = ema · m_t + (1 − ema) · (θ_{t+1} − θ_t),   m_0 = 0
 * </pre>
 * where {@code A_t} is the wrapped optimizer's step, taken from the lookahead point with the gradient computed
 * there, {@code lr_t} the wrapped optimizer's lr of group {@code lrGroup} when {@link EmaNesterov#lookahead()} is
 * called and {@code lr_0} that lr when the wrapper was made (PyTorch's {@code initial_lr}).
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th><th>reference name</th></tr>
 *   <tr><td>lookahead (β)</td><td>0.6</td><td>finite, &gt;= 0</td><td>{@code lookahead_stepsize}</td></tr>
 *   <tr><td>ema (γ)</td><td>0.99</td><td>finite, in [0, 1)</td><td>{@code lookahead_ema}</td></tr>
 *   <tr><td>scaleByLr</td><td>true</td><td></td><td>{@code use_scheduled_lookahead_stepsize}</td></tr>
 *   <tr><td>lrGroup</td><td>0</td><td>&gt;= 0, a group of the wrapped optimizer</td><td>(group 0 of the first
 *       inner optimizer)</td></tr>
 *   <tr><td>prefillSteps</td><td>0</td><td>&gt;= 0</td><td>{@code prefill_steps}</td></tr>
 *   <tr><td>restStep</td><td>{@code Long.MAX_VALUE}: never</td><td>&gt;= prefillSteps</td>
 *       <td>{@code rest_steps}</td></tr>
 * </table>
 * The defaults of {@code lookahead}, {@code ema} and {@code scaleByLr} are those of modded-nanogpt's
 * optimization-track record #39 (Muon, by the paper's first author); its window was steps [500, 2400) of 3125, and
 * record #40's [300, 1950) of 2890 with {@code lookahead = 0.3}. A window depends on the run's length, so the
 * default is the whole run: set it with {@link #withWindow}.
 *
 * <pre>{@code
 * EmaNesterovConfig config = EmaNesterovConfig.defaults().withWindow(500, 2400);
 * }</pre>
 *
 * @param lookahead    β, the lookahead step size
 * @param ema          γ, the decay of the EMA of parameter increments
 * @param scaleByLr    whether β is scaled by the lr's ratio to its value when the wrapper was made
 * @param lrGroup      the wrapped optimizer's group whose lr scales β
 * @param prefillSteps the first step that looks ahead (the EMA fills from step 0)
 * @param restStep     the first step that no longer looks ahead
 */
public record EmaNesterovConfig(double lookahead, double ema, boolean scaleByLr, int lrGroup, long prefillSteps,
                                long restStep) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public EmaNesterovConfig {
        if (!Double.isFinite(lookahead) || !(lookahead >= 0)) {
            throw new IllegalArgumentException("lookahead must be finite and >= 0, got " + lookahead);
        }
        if (!Double.isFinite(ema) || !(ema >= 0 && ema < 1)) {
            throw new IllegalArgumentException("ema must be finite and in [0, 1), got " + ema);
        }
        if (lrGroup < 0) {
            throw new IllegalArgumentException("lrGroup must be >= 0, got " + lrGroup);
        }
        if (prefillSteps < 0) {
            throw new IllegalArgumentException("prefillSteps must be >= 0, got " + prefillSteps);
        }
        if (restStep < prefillSteps) {
            throw new IllegalArgumentException("restStep must be >= prefillSteps (" + prefillSteps + "), got "
                    + restStep);
        }
    }

    /**
     * The defaults: {@code lookahead = 0.6}, {@code ema = 0.99}, scaled by the lr of group 0, over the whole run.
     *
     * @return the default settings
     */
    public static EmaNesterovConfig defaults() {
        return new EmaNesterovConfig(0.6, 0.99, true, 0, 0, Long.MAX_VALUE);
    }

    /**
     * A copy with another lookahead step size.
     *
     * @param lookahead β, finite and {@code >= 0}
     * @return the copy
     * @throws IllegalArgumentException if the value is invalid
     */
    public EmaNesterovConfig withLookahead(double lookahead) {
        return new EmaNesterovConfig(lookahead, ema, scaleByLr, lrGroup, prefillSteps, restStep);
    }

    /**
     * A copy with another EMA decay.
     *
     * @param ema γ, in {@code [0, 1)}
     * @return the copy
     * @throws IllegalArgumentException if the value is invalid
     */
    public EmaNesterovConfig withEma(double ema) {
        return new EmaNesterovConfig(lookahead, ema, scaleByLr, lrGroup, prefillSteps, restStep);
    }

    /**
     * A copy that scales β by the lr's ratio, or not.
     *
     * @param scaleByLr whether β follows the lr schedule
     * @return the copy
     */
    public EmaNesterovConfig withScaleByLr(boolean scaleByLr) {
        return new EmaNesterovConfig(lookahead, ema, scaleByLr, lrGroup, prefillSteps, restStep);
    }

    /**
     * A copy that scales β by another group's lr.
     *
     * @param lrGroup the group, {@code >= 0}
     * @return the copy
     * @throws IllegalArgumentException if the value is negative
     */
    public EmaNesterovConfig withLrGroup(int lrGroup) {
        return new EmaNesterovConfig(lookahead, ema, scaleByLr, lrGroup, prefillSteps, restStep);
    }

    /**
     * A copy that looks ahead only at steps {@code prefillSteps <= t < restStep}.
     *
     * @param prefillSteps the first step that looks ahead, {@code >= 0}
     * @param restStep     the first step that does not any more, {@code >= prefillSteps}
     * @return the copy
     * @throws IllegalArgumentException if the window is invalid
     */
    public EmaNesterovConfig withWindow(long prefillSteps, long restStep) {
        return new EmaNesterovConfig(lookahead, ema, scaleByLr, lrGroup, prefillSteps, restStep);
    }

    /** Whether step {@code t} (the number of completed steps) looks ahead. */
    boolean looksAheadAt(long t) {
        return t >= prefillSteps && t < restStep;
    }
}
