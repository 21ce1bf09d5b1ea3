package dev.muon.architecture.leaky;

import dev.muon.internal.NewtonSchulzStages;
import dev.muon.internal.UpdateStages;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A public type whose signatures name internal types in each way {@code ApiSignatures} reads, and hide them where a
 * user cannot see them: the check's own fixture ({@code ApiSignaturesTest}).
 *
 * @param <T> a type parameter bounded by an internal type
 */
public class LeakyApi<T extends NewtonSchulzStages> implements Supplier<UpdateStages> {
    /** A public field of an internal type. */
    public NewtonSchulzStages field;

    /** Not visible outside: not reported. */
    private UpdateStages hidden;

    /**
     * A public constructor with an internal type as a wildcard's lower bound.
     *
     * @param stages anything
     */
    public LeakyApi(List<? super UpdateStages> stages) {
    }

    /** Not visible outside: not reported. */
    LeakyApi() {
    }

    /**
     * An internal type inside a generic argument, as an array.
     *
     * @return nothing
     */
    public Map<String, NewtonSchulzStages[]> nested() {
        return null;
    }

    /**
     * A method type parameter bounded by an internal type.
     *
     * @param stages anything
     * @param <S>    an internal type's subtype
     */
    protected <S extends UpdateStages> void bounded(S stages) {
    }

    /** Not visible outside: not reported. */
    void packagePrivate(UpdateStages stages) {
    }

    @Override
    public UpdateStages get() {
        return hidden;
    }

    /** A nested public type: read as well. */
    public static final class Nested {
        /**
         * An internal type as a parameter.
         *
         * @param stages anything
         */
        public void take(NewtonSchulzStages stages) {
        }
    }

    /** A private nested type: not read. */
    private static final class Hidden {
        public void take(NewtonSchulzStages stages) {
        }
    }
}
