package dev.muon.internal;

import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;

/**
 * Moves a native object out of the caller's {@link PointerScope}, so that it outlives the scope it was made in.
 *
 * <p>Not API (see this package): shared by {@code dev.muon}, {@code dev.muon.orthogonalize} and muon-cuda of the
 * same version. Optimizer state and workspaces are created lazily, often inside a scope that
 * the optimizer or the user's training loop opened; without this, closing that scope would free memory that the
 * optimizer still holds.
 */
public final class NativeLifetime {
    private NativeLifetime() {
    }

    /**
     * Detaches {@code pointer} from the innermost open scope of this thread, if there is one.
     *
     * @param pointer a freshly created native object
     * @param <P>     its type
     * @return the same object, now owned by the Java reference that holds it
     */
    public static <P extends Pointer> P outliveScope(P pointer) {
        PointerScope scope = PointerScope.getInnerScope();
        if (scope != null) {
            // detach() drops the scope's reference, which would free the object at once: take one first.
            // The garbage collector still frees it once the optimizer holding it is unreachable.
            pointer.retainReference();
            scope.detach(pointer);
        }
        return pointer;
    }
}
