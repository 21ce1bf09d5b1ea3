package dev.muon.distributed;

import dev.muon.MuonAdamW;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * After {@link DistributedGroup#close()}, the group and a {@link MuonAdamW} built on it refuse every operation with
 * an {@link IllegalStateException} saying that the group is closed (not a {@code NullPointerException} from the
 * freed natives), and change nothing: parameters, step count and files stay as they were.
 */
class ClosedGroupTest {
    @TempDir
    Path dir;

    private PointerScope scope;
    private DistributedGroup group;
    private TinyClassifier model;
    private MuonAdamW optimizer;
    private Path saved;

    /** What the optimizer calls and the group's own operations see once the group is closed. */
    record Fixture(MuonAdamW optimizer, DistributedGroup group, Path saved, Path fresh) {
    }

    @BeforeEach
    void trainSaveAndClose() throws Exception {
        scope = new PointerScope();
        group = DistributedGroup.join(GroupConfig.of("127.0.0.1", WorkerLauncher.freePort(), 0, 1));
        model = new TinyClassifier(7, false);
        optimizer = ShardedTrainingWorker.builder(model).distributed(group, ShardingConfig.defaults()).build();
        // Two steps: momentum and moments exist, so a load would have state to restore.
        ShardedTrainingWorker.run(model, optimizer, ShardedTrainingWorker.STEPS - 1, 0, 1, null);
        saved = dir.resolve("before-close.pt");
        optimizer.save(saved);
        // Gradients for a step that must not be applied.
        optimizer.zeroGrad();
        model.lossAndBackward(99, 0, 1);
        group.close();
    }

    @AfterEach
    void release() {
        scope.close();
    }

    static Arguments row(String name, Consumer<Fixture> call, String message) {
        return Arguments.of(name, call, message);
    }

    /**
     * An optimizer call: it fails in the first group operation it makes, whose name is the optimizer's business
     * (it changes as the checkpoint code does), so only the closing words are fixed.
     */
    static Arguments anyOperation(String name, Consumer<Fixture> call) {
        return Arguments.of(name, call, null);
    }

    static Stream<Arguments> callsAfterClose() {
        return Stream.of(
                anyOperation("step_afterClose_isRefused", f -> f.optimizer().step()),
                anyOperation("save_afterClose_isRefused", f -> f.optimizer().save(f.fresh())),
                anyOperation("saveOverExisting_afterClose_isRefused", f -> f.optimizer().save(f.saved())),
                anyOperation("load_afterClose_isRefused", f -> f.optimizer().load(f.saved())),
                row("rank_afterClose_isRefused", f -> f.group().rank(), "rank() on a closed DistributedGroup"),
                row("worldSize_afterClose_isRefused", f -> f.group().worldSize(),
                        "worldSize() on a closed DistributedGroup"),
                row("device_afterClose_isRefused", f -> f.group().device(), "device() on a closed DistributedGroup"),
                row("allReduceOfLongs_afterClose_isRefused", f -> f.group().allReduceSum(new long[]{1}, "flags"),
                        "all-reduce of flags on a closed DistributedGroup"),
                row("allGather_afterClose_isRefused", f -> f.group().allGather(3, "a value"),
                        "all-gather of a value on a closed DistributedGroup"),
                row("allReduceOfTensor_afterClose_isRefused", f -> f.group().allReduceSum(torch.ones(2), "x"),
                        "all-reduce of x on a closed DistributedGroup"),
                row("broadcast_afterClose_isRefused", f -> f.group().broadcast(torch.ones(2), 0, "x"),
                        "broadcast of x from rank 0 on a closed DistributedGroup"),
                row("send_afterClose_isRefused", f -> f.group().send(torch.ones(2), 1, 0, "x"),
                        "send of x to rank 1 on a closed DistributedGroup"),
                row("receive_afterClose_isRefused", f -> f.group().receive(torch.ones(2), 1, 0, "x"),
                        "receive of x from rank 1 on a closed DistributedGroup"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("callsAfterClose")
    void callAfterClose_throwsIllegalState_andChangesNothing(String name, Consumer<Fixture> call, String message)
            throws Exception {
        Map<String, Tensor> before = snapshot();
        long stepsBefore = optimizer.stepCount();
        byte[] fileBefore = Files.readAllBytes(saved);
        Path fresh = dir.resolve("after-close.pt");

        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> call.accept(new Fixture(optimizer, group, saved, fresh)));

        if (message != null) {
            assertEquals(message, e.getMessage());
        } else {
            assertTrue(e.getMessage().matches("[^\\n]+ on a closed DistributedGroup"), e.getMessage());
        }
        assertEquals(stepsBefore, optimizer.stepCount());
        Map<String, Tensor> after = snapshot();
        for (String p : before.keySet()) {
            assertTrue(before.get(p).equal(after.get(p)), p + " changed");
        }
        assertArrayEquals(fileBefore, Files.readAllBytes(saved), "the saved checkpoint changed");
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(1, files.count(), "a file was written or left behind");
        }
        assertFalse(Files.exists(fresh));
        // Still readable for logs.
        assertEquals(0, group.config().rank());
    }

    private Map<String, Tensor> snapshot() {
        Map<String, Tensor> copy = new LinkedHashMap<>();
        model.named().forEach((k, v) -> copy.put(k, v.detach().clone()));
        return copy;
    }
}
