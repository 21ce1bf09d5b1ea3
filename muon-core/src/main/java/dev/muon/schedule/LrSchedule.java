package dev.muon.schedule;

import dev.muon.internal.TorchNatives;

import java.util.function.LongToDoubleFunction;

/**
 * A learning-rate schedule: a pure function from the step number to a factor on each group's base lr, so that a
 * resumed run (which knows its step) gets the same lr as an uninterrupted one. {@link LrScheduler} applies it.
 * Three common schedules are built in; any other is a lambda {@code step -> factor}.
 *
 * <table>
 *   <caption>Schedules</caption>
 *   <tr><th>schedule</th><th>factor at step s (0-based)</th></tr>
 *   <tr><td>{@link #constant()}</td><td>1</td></tr>
 *   <tr><td>{@link #warmupCosine(long, long, double)}</td><td>{@code (s+1)/w} while {@code s < w}, then
 *       {@code m + (1−m)·(1 + cos(π·(s−w)/(T−w)))/2}, and {@code m} from {@code T} on</td></tr>
 *   <tr><td>{@link #warmupStableDecay(long, long, long, double)}</td><td>{@code (s+1)/w} while {@code s < w},
 *       1 for {@code stable} steps, then linear to {@code m} over {@code decay} steps, {@code m} after</td></tr>
 * </table>
 *
 * <pre>{@code
 * LrScheduler lrs = LrScheduler.of(optimizer, LrSchedule.warmupStableDecay(200, 8_000, 1_800, 0.0));
 * lrs.apply(optimizer.stepCount());   // before each step
 * }</pre>
 */
@FunctionalInterface
public interface LrSchedule {

    /**
     * The factor on the base lr at a step.
     *
     * @param step the 0-based step about to be taken, {@code >= 0}
     * @return the factor, in [0, 1]
     * @throws IllegalArgumentException if {@code step < 0}
     */
    double factor(long step);

    /**
     * The base lr at every step.
     *
     * @return the schedule
     */
    static LrSchedule constant() {
        return new Constant();
    }

    /**
     * Linear warm-up from {@code 1/warmupSteps} to 1, then cosine decay to {@code minFactor} at
     * {@code totalSteps}.
     *
     * @param warmupSteps the warm-up length, {@code >= 0}
     * @param totalSteps  the step at which the decay ends, {@code > warmupSteps}
     * @param minFactor   the final factor, in [0, 1]
     * @return the schedule
     * @throws IllegalArgumentException if a value breaks its rule
     */
    static LrSchedule warmupCosine(long warmupSteps, long totalSteps, double minFactor) {
        return new WarmupCosine(warmupSteps, totalSteps, minFactor);
    }

    /**
     * Warm-up, a stable phase at the base lr, then a linear decay to {@code minFactor} (the "WSD" schedule of
     * MiniCPM, arXiv:2404.06395).
     *
     * @param warmupSteps the warm-up length, {@code >= 0}
     * @param stableSteps the length of the stable phase, {@code >= 0}
     * @param decaySteps  the length of the decay, {@code >= 1}
     * @param minFactor   the final factor, in [0, 1]
     * @return the schedule
     * @throws IllegalArgumentException if a value breaks its rule
     */
    static LrSchedule warmupStableDecay(long warmupSteps, long stableSteps, long decaySteps, double minFactor) {
        return new WarmupStableDecay(warmupSteps, stableSteps, decaySteps, minFactor);
    }

    /**
     * Whether a schedule is one of the built-in ones ({@link #constant()}, {@link #warmupCosine},
     * {@link #warmupStableDecay}), which a {@link ScheduleRecord} holds as itself and a resume rebuilds.
     *
     * @param schedule the schedule
     * @return true for a built-in one
     */
    static boolean isBuiltIn(LrSchedule schedule) {
        return schedule instanceof Constant || schedule instanceof WarmupCosine
                || schedule instanceof WarmupStableDecay;
    }

    /** The constant schedule. */
    record Constant() implements LrSchedule {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        @Override
        public double factor(long step) {
            requireStep(step);
            return 1.0;
        }
    }

    /**
     * Warm-up then cosine decay.
     *
     * @param warmupSteps the warm-up length
     * @param totalSteps  the end of the decay
     * @param minFactor   the final factor
     */
    record WarmupCosine(long warmupSteps, long totalSteps, double minFactor) implements LrSchedule {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Validates the fields.
         *
         * @throws IllegalArgumentException naming the field, the rule and the value
         */
        public WarmupCosine {
            requireWarmup(warmupSteps);
            if (totalSteps <= warmupSteps) {
                throw new IllegalArgumentException("totalSteps must be > warmupSteps (" + warmupSteps + "), got "
                        + totalSteps);
            }
            requireMinFactor(minFactor);
        }

        @Override
        public double factor(long step) {
            return warmupThen(step, warmupSteps, this::decay);
        }

        private double decay(long step) {
            if (step >= totalSteps) {
                return minFactor;
            }
            double progress = (double) (step - warmupSteps) / (totalSteps - warmupSteps);
            return minFactor + (1 - minFactor) * 0.5 * (1 + Math.cos(Math.PI * progress));
        }
    }

    /**
     * Warm-up, stable, decay.
     *
     * @param warmupSteps the warm-up length
     * @param stableSteps the stable length
     * @param decaySteps  the decay length
     * @param minFactor   the final factor
     */
    record WarmupStableDecay(long warmupSteps, long stableSteps, long decaySteps, double minFactor)
            implements LrSchedule {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Validates the fields.
         *
         * @throws IllegalArgumentException naming the field, the rule and the value
         */
        public WarmupStableDecay {
            requireWarmup(warmupSteps);
            if (stableSteps < 0) {
                throw new IllegalArgumentException("stableSteps must be >= 0, got " + stableSteps);
            }
            if (decaySteps < 1) {
                throw new IllegalArgumentException("decaySteps must be >= 1, got " + decaySteps);
            }
            requireMinFactor(minFactor);
        }

        @Override
        public double factor(long step) {
            return warmupThen(step, warmupSteps, this::stableThenDecay);
        }

        private double stableThenDecay(long step) {
            long intoDecay = step - warmupSteps - stableSteps;
            if (intoDecay < 0) {
                return 1.0;
            }
            if (intoDecay >= decaySteps) {
                return minFactor;
            }
            return 1 - (1 - minFactor) * (double) (intoDecay + 1) / decaySteps;
        }
    }

    /**
     * The warm-up both warm-up schedules share: {@code (step + 1) / warmupSteps} while {@code step < warmupSteps},
     * then what {@code after} gives for the step.
     *
     * @throws IllegalArgumentException if {@code step < 0}
     */
    private static double warmupThen(long step, long warmupSteps, LongToDoubleFunction after) {
        requireStep(step);
        if (step < warmupSteps) {
            return (double) (step + 1) / warmupSteps;
        }
        return after.applyAsDouble(step);
    }

    private static void requireStep(long step) {
        if (step < 0) {
            throw new IllegalArgumentException("step must be >= 0, got " + step);
        }
    }

    private static void requireWarmup(long warmupSteps) {
        if (warmupSteps < 0) {
            throw new IllegalArgumentException("warmupSteps must be >= 0, got " + warmupSteps);
        }
    }

    private static void requireMinFactor(double minFactor) {
        if (!(minFactor >= 0 && minFactor <= 1)) {
            throw new IllegalArgumentException("minFactor must be in [0, 1], got " + minFactor);
        }
    }
}
