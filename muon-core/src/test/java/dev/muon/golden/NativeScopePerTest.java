package dev.muon.golden;

import org.bytedeco.javacpp.PointerScope;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Opens a {@link PointerScope} before each test and closes it after, so that the tensors a test creates are freed
 * when it ends rather than whenever the garbage collector runs. Use with {@code @ExtendWith}.
 */
public final class NativeScopePerTest implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(NativeScopePerTest.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NAMESPACE).put(context.getUniqueId(), new PointerScope());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        PointerScope scope = context.getStore(NAMESPACE).remove(context.getUniqueId(), PointerScope.class);
        if (scope != null) {
            scope.close();
        }
    }
}
