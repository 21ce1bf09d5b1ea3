package dev.muon.djl;

import ai.djl.ndarray.NDManager;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One DJL base {@link NDManager} for a test class, opened before its first test and closed after its last, so that
 * the arrays its tests make live no longer than the class. A test class registers it as
 * {@code @RegisterExtension static final ClassManager manager = new ClassManager();}.
 */
final class ClassManager implements BeforeAllCallback, AfterAllCallback {
    private NDManager manager;

    @Override
    public void beforeAll(ExtensionContext context) {
        manager = NDManager.newBaseManager();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        manager.close();
    }

    /**
     * The class's manager.
     *
     * @return the manager, open between the class's first test and its last
     */
    NDManager get() {
        return manager;
    }
}
