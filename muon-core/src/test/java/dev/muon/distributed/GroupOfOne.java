package dev.muon.distributed;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A group of this process alone ({@link WorkerLauncher#groupOfOne}), joined before a test class's tests and closed
 * after them: {@code @RegisterExtension static final GroupOfOne SINGLE = new GroupOfOne();}.
 */
final class GroupOfOne implements BeforeAllCallback, AfterAllCallback {
    private DistributedGroup group;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        group = WorkerLauncher.groupOfOne();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        group.close();
    }

    DistributedGroup group() {
        return group;
    }
}
