package dev.muon.internal;

import org.bytedeco.pytorch.Tensor;

import java.util.Objects;

/**
 * The way into {@code dev.muon.orthogonalize.NewtonSchulz}'s plain iteration with a device's
 * {@link NewtonSchulzKernels}, for {@code muon-cuda} of the same version. {@code NewtonSchulz} hands its loop to this
 * class when it is initialized, so that its own public API names no internal type (the pattern of the JDK's
 * {@code SharedSecrets}); this package never names {@code NewtonSchulz} itself, which would make the two packages
 * depend on each other.
 *
 * <p>Not user API and no compatibility promise (see this package).
 *
 * <pre>{@code
 * NewtonSchulz libtorch = new NewtonSchulz(config);
 * Tensor o = NewtonSchulzAccess.orthogonalizeWith(libtorch, update, kernelStages);
 * }</pre>
 */
public final class NewtonSchulzAccess {
    /**
     * The plain iteration of one orthogonalizer type, run with a device's stages.
     *
     * @param <N> the orthogonalizer type
     */
    @FunctionalInterface
    public interface Loop<N> {
        /**
         * Runs the plain iteration on {@code newtonSchulz}'s workspace, with the stages {@code device} takes over.
         *
         * @param newtonSchulz the orthogonalizer whose loop and workspace run
         * @param update       the matrix or batch of matrices
         * @param device       the stages to try first
         * @return the orthogonalized update, a view of a workspace valid until the next call on the orthogonalizer
         */
        Tensor orthogonalizeWith(N newtonSchulz, Tensor update, NewtonSchulzKernels device);
    }

    private record Registration<N>(Class<N> type, Loop<N> loop) {
    }

    private static volatile Registration<?> registration;

    private NewtonSchulzAccess() {
    }

    /**
     * Hands over the loop; {@code NewtonSchulz} calls it once, from its static initializer.
     *
     * @param type the orthogonalizer type
     * @param loop its plain iteration
     * @param <N>  the orthogonalizer type
     * @throws IllegalStateException if a loop was registered already
     */
    public static synchronized <N> void register(Class<N> type, Loop<N> loop) {
        Objects.requireNonNull(type, "type must not be null");
        Objects.requireNonNull(loop, "loop must not be null");
        if (registration != null) {
            throw new IllegalStateException("a Newton–Schulz loop is registered already, by "
                    + registration.type().getName());
        }
        registration = new Registration<>(type, loop);
    }

    /**
     * Runs {@code newtonSchulz}'s plain iteration (the {@code GEMM} kernel, whatever its {@code nsAlgorithm} says)
     * with the stages {@code device} takes over and libtorch's ops for the rest. With every stage declined the
     * result is {@code newtonSchulz.orthogonalize(update)}'s under {@code NsAlgorithm.GEMM}, bit for bit.
     *
     * @param newtonSchulz a {@code NewtonSchulz}, whose loop and workspace run
     * @param update       the matrix or batch of matrices, as for {@code NewtonSchulz.orthogonalize}
     * @param device       the stages to try on a device's kernels first; its contract is
     *                     {@link NewtonSchulzKernels}'s
     * @param <N>          the orthogonalizer type
     * @return the orthogonalized update, a view of a workspace valid until the next call on {@code newtonSchulz}
     * @throws IllegalArgumentException      if {@code newtonSchulz} is not of the registered type, or as
     *                                       {@code NewtonSchulz.orthogonalize} does for {@code update}
     * @throws UnsupportedOperationException as {@code NewtonSchulz.orthogonalize} does for {@code update}
     * @throws NullPointerException          if {@code newtonSchulz} or {@code device} is null
     */
    public static <N> Tensor orthogonalizeWith(N newtonSchulz, Tensor update, NewtonSchulzKernels device) {
        Objects.requireNonNull(newtonSchulz, "newtonSchulz must not be null");
        Registration<?> r = registration;
        if (r == null || r.type() != newtonSchulz.getClass()) {
            // An instance of the registered type exists only after its class registered: any other is a misuse.
            throw new IllegalArgumentException("newtonSchulz must be a " + (r == null
                    ? "dev.muon.orthogonalize.NewtonSchulz" : r.type().getName()) + ", got "
                    + newtonSchulz.getClass().getName());
        }
        @SuppressWarnings("unchecked")
        Loop<N> loop = (Loop<N>) r.loop();
        return loop.orthogonalizeWith(newtonSchulz, update, device);
    }
}
