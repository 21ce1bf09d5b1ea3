package dev.muon.djl;

import dev.muon.Binding;
import dev.muon.StateStorage;
import dev.muon.UpdateRecipe;
import ai.djl.ndarray.types.DataType;

/**
 * The parameter dtypes and DJL settings that muon-djl runs, checked before any array is touched: a refused one is an
 * exception that names it, the rule and the value, never a crash. The Muon settings are checked where muon-djl maps
 * their {@link dev.muon.UpdateRecipe} ({@code MuonStep}).
 *
 * <p>Newton–Schulz runs in float32 (the default) or float64. Bfloat16 is refused: DJL 0.36.0's
 * {@code toType(DataType.BFLOAT16)} aborts the JVM ({@code terminate called without an active exception}), and so
 * does creating a bfloat16 array from a buffer, so muon-djl never converts to it, and a bfloat16 parameter is refused
 * too. Against PyTorch's Muon, whose default iterates in bfloat16, float32 costs about twice the time of bf16 matrix
 * units where a CPU or GPU has them, and is about 5e-2 closer to the exact iteration (docs/djl.md).
 */
final class DjlSupport {
    /** muon-djl as muon-core's shared rules and tables speak of it: DJL's builders spell a setting opt + its name. */
    static final Binding BINDING = new Binding("muon-djl", "the block", "requires grad false", "opt");

    private DjlSupport() {
    }

    /**
     * Checks that muon-djl's Muon can update a parameter of this dtype.
     *
     * @param dtype the parameter's dtype
     * @param label how to name the parameter, e.g. {@code parameter '01Linear_weight'}
     * @throws IllegalArgumentException naming the parameter and its dtype
     */
    static void requireSupported(DataType dtype, String label) {
        requireSupported(dtype, "Muon", label);
    }

    /**
     * Checks that muon-djl can update a parameter of this dtype with the given optimizer.
     *
     * @param dtype     the parameter's dtype
     * @param optimizer the optimizer that would update it ({@code Muon} or {@code AdamW}), for the message
     * @param label     how to name the parameter, e.g. {@code parameter '01Linear_bias'}
     * @throws IllegalArgumentException naming the parameter and its dtype
     */
    static void requireSupported(DataType dtype, String optimizer, String label) {
        if (dtype == DataType.BFLOAT16) {
            throw new IllegalArgumentException("muon-djl does not update bfloat16 parameters (DJL's bfloat16 "
                    + "conversions abort the JVM); " + label + " has dtype bfloat16");
        }
        if (!dtype.isFloating()) {
            throw new IllegalArgumentException(optimizer + " only supports floating-point parameters; " + label
                    + " has dtype " + dtype);
        }
    }

    /**
     * Refuses the settings of DJL's base builder that would change these optimizers' formulas.
     *
     * @param weightDecays   {@code optWeightDecays}: DJL's L2 term on the gradient
     * @param beginNumUpdate {@code optBeginNumUpdate}: the step count a resumed run starts from
     * @param configMethod   the builder method that sets the decoupled weight decay, for the message
     * @throws IllegalArgumentException naming the setting and the value
     */
    static void requireDjlDefaults(float weightDecays, int beginNumUpdate, String configMethod) {
        requireDjlDefaults(weightDecays, beginNumUpdate, configMethod, StateStorage.withParameter());
    }

    /**
     * {@link #requireDjlDefaults(float, int, String)}, and where the Muon state lives: beside its parameters only.
     *
     * @param weightDecays   {@code optWeightDecays}
     * @param beginNumUpdate {@code optBeginNumUpdate}
     * @param configMethod   the builder method that sets the decoupled weight decay, for the message
     * @param stateStorage   where the Muon state lives ({@code optStateStorage}, {@code optMuonStateStorage})
     * @throws IllegalArgumentException naming the setting and the value
     */
    static void requireDjlDefaults(float weightDecays, int beginNumUpdate, String configMethod,
                                   StateStorage stateStorage) {
        if (stateStorage.place() != StateStorage.Place.WITH_PARAMETER) {
            throw UpdateRecipe.refused("stateStorage = " + stateStorage.place(), BINDING.module(), "its buffers are "
                    + "NDArrays of DJL's engine, kept beside their parameters, and it has no path that moves them to "
                    + "host memory or files (muon-core's Muon and MuonAdamW have)");
        }
        if (weightDecays != 0) {
            throw new IllegalArgumentException("optWeightDecays must be 0, got " + weightDecays + ": it adds DJL's "
                    + "L2 term to the gradient; the decoupled weight decay is the config's (" + configMethod + ")");
        }
        if (beginNumUpdate < 0) {
            throw new IllegalArgumentException("optBeginNumUpdate must be >= 0, got " + beginNumUpdate);
        }
    }
}
