package dev.muon.architecture.leaky;

import dev.muon.internal.NewtonSchulzKernels;
import dev.muon.internal.FusedUpdateKernels;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A public type whose signatures name internal types in each way {@code ApiSignatures} reads, and hide them where a
 * user cannot see them: the check's own fixture ({@code ApiSignaturesTest}).
 *
 * @param <T> a type parameter bounded by an internal type
 */
public class LeakyApi<T extends NewtonSchulzKernels> implements Supplier<FusedUpdateKernels> {
    /** A public field of an internal type. */
    public NewtonSchulzKernels field;

    /** Not visible outside: not reported. */
    private FusedUpdateKernels hidden;

    /**
     * A public constructor with an internal type as a wildcard's lower bound.
     *
     * @param stages anything
     */
    public LeakyApi(List<? super FusedUpdateKernels> stages) {
    }

    /** Not visible outside: not reported. */
    LeakyApi() {
    }

    /**
     * An internal type inside a generic argument, as an array.
     *
     * @return nothing
     */
    public Map<String, NewtonSchulzKernels[]> nested() {
        return null;
    }

    /**
     * A method type parameter bounded by an internal type.
     *
     * @param stages anything
     * @param <S>    an internal type's subtype
     */
    protected <S extends FusedUpdateKernels> void bounded(S stages) {
    }

    /** Not visible outside: not reported. */
    void packagePrivate(FusedUpdateKernels stages) {
    }

    @Override
    public FusedUpdateKernels get() {
        return hidden;
    }

    /** A nested public type: read as well. */
    public static final class Nested {
        /**
         * An internal type as a parameter.
         *
         * @param stages anything
         */
        public void take(NewtonSchulzKernels stages) {
        }
    }

    /** A private nested type: not read. */
    private static final class Hidden {
        public void take(NewtonSchulzKernels stages) {
        }
    }
}
