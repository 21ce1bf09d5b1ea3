package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.Arrays;
import java.util.Objects;

/**
 * The declaration of one per-parameter state buffer of a Muon update (the momentum, NorMuon's second moment, a
 * future variant's): its names in both files, its shape and dtype as rules on the parameter's, the values it may
 * hold, and whether it lives with its parameter's owner in a distributed optimizer. The element of the update that
 * owns a buffer declares it once ({@link UpdateRecipe}); the parameter state, the state value, capture and
 * restore, the gather of a distributed checkpoint, the fit check ({@link dev.muon.state.StateFit}) and both files
 * ({@link dev.muon.state.CheckpointFile}, {@link dev.muon.state.TorchStateFile}) iterate over the declarations and
 * name no buffer themselves.
 * Loads no libtorch class, so a module without libtorch reads it too.
 *
 * @param key        its name in checkpoints ({@code <key>/<parameter>}) and in a state's entry
 * @param torchKey   its key in a PyTorch optimizer state's per-parameter dict
 * @param label      how messages name it, e.g. {@code momentum buffer}
 * @param shape      its shape, from the parameter's
 * @param dtype      its dtype, from the parameter's
 * @param values     the values it may hold
 * @param owned      whether only the rank that updates the parameter keeps it (distributed), as the momentum
 */
public record BufferSpec(String key, String torchKey, String label, Shape shape, Dtype dtype, Values values,
                         boolean owned) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** A buffer's shape as a rule on its parameter's. */
    public enum Shape {
        /** The parameter's own shape. */
        PARAMETER,
        /**
         * One entry per row of the parameter's matrix view: the shape without its last size ({@code [k, rows]} for
         * a stack of {@code k} matrices), and {@code [out]} for a 4-D conv filter flattened to
         * {@code out × (in·kh·kw)}.
         */
        ROWS,
        /** One value per parameter, a 0-dim tensor (a per-parameter step count, as PyTorch's Adam keeps). */
        SCALAR;

        static {
            TorchNatives.extract();
        }

        /**
         * The buffer's shape for a parameter of this shape.
         *
         * @param parameter the parameter's sizes
         * @return the buffer's sizes
         */
        public long[] of(long[] parameter) {
            return switch (this) {
                case PARAMETER -> parameter.clone();
                case ROWS -> parameter.length == 4 ? new long[]{parameter[0]}
                        : Arrays.copyOf(parameter, Math.max(0, parameter.length - 1));
                case SCALAR -> new long[0];
            };
        }
    }

    /** A buffer's dtype as a rule on its parameter's, by dtype name ({@code float32}, {@code bfloat16}, ...). */
    public enum Dtype {
        /** The parameter's own dtype. */
        PARAMETER,
        /**
         * Stored in bfloat16; a file may hold it in the parameter's dtype instead (a PyTorch optimizer's state is),
         * which a restore rounds.
         */
        BFLOAT16,
        /**
         * float32, or float64 for a float64 parameter: a slowly moving average whose small increments a narrower
         * type would lose.
         */
        WIDE;

        static {
            TorchNatives.extract();
        }

        /**
         * The dtype the buffer is kept in, for a parameter of this dtype.
         *
         * @param parameter the parameter's dtype name
         * @return the buffer's dtype name
         */
        public String of(String parameter) {
            return switch (this) {
                case PARAMETER -> parameter;
                case BFLOAT16 -> "bfloat16";
                case WIDE -> parameter.equals("float64") ? "float64" : "float32";
            };
        }

        /**
         * Whether a state may hold the buffer in a dtype: its own, or the parameter's for a bfloat16 one.
         *
         * @param held      the dtype a state holds it in
         * @param parameter the parameter's dtype name
         * @return true if a restore takes it
         */
        public boolean accepts(String held, String parameter) {
            return held.equals(of(parameter)) || (this == BFLOAT16 && held.equals(parameter));
        }
    }

    /** The values a buffer may hold. */
    public enum Values {
        /** Finite. */
        FINITE,
        /** Finite and {@code >= 0} (a second moment). */
        FINITE_NON_NEGATIVE;

        static {
            TorchNatives.extract();
        }
    }

    /**
     * Validates.
     *
     * @throws NullPointerException if a field is null
     */
    public BufferSpec {
        Objects.requireNonNull(key, "key must not be null");
        Objects.requireNonNull(torchKey, "torchKey must not be null");
        Objects.requireNonNull(label, "label must not be null");
        Objects.requireNonNull(shape, "shape must not be null");
        Objects.requireNonNull(dtype, "dtype must not be null");
        Objects.requireNonNull(values, "values must not be null");
    }
}
