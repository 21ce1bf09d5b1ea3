package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.AssignmentChanges;
import dev.muon.state.StateMismatchException;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A run continued after its assignment changed: a parameter moved from Muon to AdamW or back, a parameter appeared,
 * a tied weight was split or tied. By default the restore refuses, lists every difference and says how to continue;
 * with {@link AssignmentChanges#START_FRESH} every unchanged parameter is restored bit for bit (value, momentum or
 * moments, step counts), a moved one gets its value and no optimizer state, a new one keeps its value, and one INFO
 * line names each. What a changed assignment does not explain (another shape, a parameter the optimizer lacks) is
 * still refused, and a refusal changes nothing.
 */
@ExtendWith(NativeScopePerTest.class)
class ReassignedRestoreTest {
    @TempDir
    Path dir;

    /** The saved run's model: an embedding, two hidden matrices, a bias and a head, from one seed. */
    private static Map<String, Tensor> model(long seed, boolean tiedHead, boolean extra) {
        torch.manual_seed(seed);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("wte.weight", torch.randn(10, 4).requires_grad_(true));
        named.put("fc1.weight", torch.randn(6, 4).requires_grad_(true));
        named.put("fc1.bias", torch.randn(6).requires_grad_(true));
        named.put("fc2.weight", torch.randn(4, 6).requires_grad_(true));
        if (extra) {
            named.put("fc3.weight", torch.randn(4, 4).requires_grad_(true));
        }
        named.put("lm_head.weight", tiedHead ? named.get("wte.weight") : torch.randn(10, 4).requires_grad_(true));
        return named;
    }

    private static MuonAdamW.Builder builder(Map<String, Tensor> named) {
        return MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3));
    }

    /** Two steps of the saved run; returns the checkpoint. */
    private Path saved(Map<String, Tensor> named, MuonAdamW opt) {
        for (int step = 0; step < 2; step++) {
            opt.zeroGrad();
            TestModels.setGradients(distinct(named), 40 + step);
            opt.step();
        }
        Path file = dir.resolve("run-" + System.nanoTime() + ".ckpt");
        opt.save(file);
        return file;
    }

    /** The named map without the second name of a tied weight. */
    private static Map<String, Tensor> distinct(Map<String, Tensor> named) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        named.forEach((name, t) -> {
            if (out.values().stream().noneMatch(seen -> seen.equals(t))) {
                out.put(name, t);
            }
        });
        return out;
    }

    /**
     * One case: how the saved run is built, how the resumed one is (its model and builder), which parameters start
     * afresh and the log line's list of them, and the difference the default refusal names.
     */
    record Change(String label, boolean savedTied, boolean resumedTied, boolean resumedExtra,
                  Function<MuonAdamW.Builder, MuonAdamW.Builder> savedBuild,
                  Function<MuonAdamW.Builder, MuonAdamW.Builder> resumedBuild, List<String> fresh, String logged,
                  String refusal) {
        @Override
        public String toString() {
            return label;
        }
    }

    static Stream<Arguments> changes() {
        Function<MuonAdamW.Builder, MuonAdamW.Builder> same = b -> b;
        return Stream.of(
                new Change("muonToAdamW", false, false, false, same, b -> b.forceAdamW("fc2.weight"),
                        List.of("fc2.weight"), "'fc2.weight' (MUON in the state, now ADAMW)",
                        "'fc2.weight' optimizer: this optimizer ADAMW, the state MUON"),
                new Change("adamWToMuon", false, false, false, b -> b.forceAdamW("fc2.weight"), same,
                        List.of("fc2.weight"), "'fc2.weight' (ADAMW in the state, now MUON)",
                        "'fc2.weight' optimizer: this optimizer MUON, the state ADAMW"),
                new Change("appeared", false, false, true, same, same, List.of("fc3.weight"),
                        "'fc3.weight' (not in the state)",
                        "'fc3.weight' presence: this optimizer present, the state absent"),
                new Change("tiedWeightSplit", true, false, false, same, same, List.of("lm_head.weight"),
                        "'lm_head.weight' (tied to 'wte.weight' in the state, now ADAMW)",
                        "'lm_head.weight' tied to: this optimizer none, the state wte.weight"),
                new Change("weightsTied", false, true, false, same, same, List.of("lm_head.weight"),
                        "'lm_head.weight' (ADAMW in the state, now tied to 'wte.weight')",
                        "'lm_head.weight' tied to: this optimizer wte.weight, the state none"))
                .map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("changes")
    void changedAssignment_isRefusedByDefault_andStartsFreshWhenAsked(Change c) {
        Map<String, Tensor> savedNamed = model(1, c.savedTied(), false);
        MuonAdamW savedOpt = c.savedBuild().apply(builder(savedNamed)).build();
        Path file = saved(savedNamed, savedOpt);
        Map<String, Tensor> savedState = CheckpointTest.stateOf(savedOpt);

        Map<String, Tensor> named = model(2, c.resumedTied(), c.resumedExtra());
        MuonAdamW opt = c.resumedBuild().apply(builder(named)).build();
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);

        // By default: refused, every difference listed, the way on named, nothing changed.
        StateMismatchException e = assertThrows(StateMismatchException.class, () -> opt.load(file));
        assertTrue(e.getMessage().contains(c.refusal()), e.getMessage());
        assertTrue(e.getMessage().endsWith("nothing was changed. If parameters moved between Muon and AdamW, "
                + "appeared, or a tied weight was split, restore with AssignmentChanges.START_FRESH (load(path, "
                + "AssignmentChanges.START_FRESH) or restore(state, AssignmentChanges.START_FRESH)) to restore the "
                + "rest and start those parameters afresh (docs/checkpoints.md)"), e.getMessage());
        assertSameTensors(before, CheckpointTest.stateOf(opt), "a refused load");
        assertEquals(0, opt.stepCount());

        // Opted in: the rest bit for bit, the changed ones afresh, named in one line.
        try (CapturedLog log = new CapturedLog(MuonAdamW.class.getName())) {
            opt.load(file, AssignmentChanges.START_FRESH);
            List<String> lines = log.messages(Level.INFO).stream().filter(l -> l.contains("START_FRESH")).toList();
            assertEquals(List.of("MuonAdamW: restored checkpoint " + file + " with AssignmentChanges.START_FRESH; 1 "
                    + "parameter starts afresh (no optimizer state): " + c.logged()), lines);
        }
        assertEquals(2, opt.stepCount());
        assertEquals(savedOpt.lr(0), opt.lr(0));
        assertEquals(savedOpt.lr(1), opt.lr(1));
        Map<String, Tensor> restored = CheckpointTest.stateOf(opt);
        for (Map.Entry<String, Tensor> entry : restored.entrySet()) {
            String name = entry.getKey();
            String parameter = name.contains("#") ? name.substring(0, name.indexOf('#')) : name;
            if (c.fresh().contains(parameter)) {
                continue;
            }
            assertTrue(savedState.containsKey(name), name + " has state the saved run did not");
            assertTrue(savedState.get(name).equal(entry.getValue()), name + " is not the saved run's, bit for bit");
        }
        for (String name : c.fresh()) {
            assertFalse(restored.containsKey(name + "#momentum") || restored.containsKey(name + "#exp_avg"),
                    name + " kept optimizer state");
        }
        String changed = c.fresh().get(0);
        Map<String, Tensor> params = CheckpointTest.paramsOf(opt);
        if (params.containsKey(changed)) {
            // A moved parameter takes the saved value; a new one, or one the state held as a tie, keeps its own.
            Tensor expected = savedState.containsKey(changed) ? savedState.get(changed) : before.get(changed);
            assertTrue(expected.equal(params.get(changed)), changed + "'s value");
        }

        // The next step: the restored momentum and moments go on, the fresh parameter starts from zero.
        opt.zeroGrad();
        TestModels.setGradients(distinct(named), 77);
        Map<String, Tensor> grads = new LinkedHashMap<>();
        distinct(named).forEach((name, p) -> grads.put(name, p.grad().clone()));
        opt.step();
        double mu = 0.95;
        for (String name : opt.assignment().names(OptimizerKind.MUON)) {
            Tensor saved = c.fresh().contains(name) ? torch.zeros_like(grads.get(name)) : savedState.get(name
                    + "#momentum");
            Tensor expected = saved.mul(new Scalar(mu)).add(grads.get(name).mul(new Scalar(1 - mu)));
            double diff = opt.muonState(name).orElseThrow().momentum().sub(expected).abs().max().item_double();
            assertTrue(diff <= 1e-6, name + "'s momentum is off by " + diff);
        }
        for (String name : opt.assignment().names(OptimizerKind.ADAMW)) {
            long step = opt.adamWState(name).orElseThrow().step();
            assertEquals(c.fresh().contains(name) ? 1 : 3, step, name + "'s AdamW step count");
        }
    }

    static Stream<Arguments> stillRefused() {
        return Stream.of(
                Arguments.of("otherShape", (Function<Map<String, Tensor>, Map<String, Tensor>>) n -> {
                    n.put("fc1.weight", torch.randn(7, 4).requires_grad_(true));
                    return n;
                }, "'fc1.weight' shape: this optimizer [7, 4], the state [6, 4]"),
                Arguments.of("parameterGone", (Function<Map<String, Tensor>, Map<String, Tensor>>) n -> {
                    n.remove("fc1.bias");
                    return n;
                }, "'fc1.bias' presence: this optimizer absent, the state present (a restore with "
                        + "AssignmentChanges.START_FRESH drops no parameter of the state)"));
    }

    /** What a changed assignment does not explain is refused even with START_FRESH, and nothing changes. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("stillRefused")
    void startFresh_otherShapeOrMissingParameter_isStillRefused(String label,
                                                               Function<Map<String, Tensor>, Map<String, Tensor>> edit,
                                                               String message) {
        Map<String, Tensor> savedNamed = model(1, false, false);
        Path file = saved(savedNamed, builder(savedNamed).build());
        Map<String, Tensor> named = edit.apply(model(2, false, false));
        MuonAdamW opt = builder(named).build();
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);
        StateMismatchException e = assertThrows(StateMismatchException.class,
                () -> opt.load(file, AssignmentChanges.START_FRESH));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertSameTensors(before, CheckpointTest.stateOf(opt), "a refused load");
        assertEquals(0, opt.stepCount());
    }

    /** The same through {@code restore(state, changes)}, for {@code Muon} alone: a parameter appeared. */
    @Test
    void muon_parameterAppeared_startsFreshThroughRestore() {
        torch.manual_seed(3);
        Tensor a = torch.randn(6, 4);
        Tensor b = torch.randn(4, 6);
        Muon first = Muon.of(List.of(a, b), MuonConfig.defaults().withLr(0.02));
        stepWithRandomGradients(first, List.of(a, b));
        var state = first.state();

        Tensor a2 = torch.randn(6, 4);
        Tensor b2 = torch.randn(4, 6);
        Tensor c2 = torch.randn(5, 5);
        Tensor c2Before = c2.clone();
        Muon second = Muon.of(List.of(a2, b2, c2), MuonConfig.defaults().withLr(0.02));
        StateMismatchException e = assertThrows(StateMismatchException.class, () -> second.restore(state));
        assertTrue(e.getMessage().contains("'parameter 2 of group 0' presence: this optimizer present, the state "
                + "absent"), e.getMessage());
        assertTrue(e.getMessage().contains("restore with AssignmentChanges.START_FRESH"), e.getMessage());
        try (CapturedLog log = new CapturedLog(Muon.class.getName())) {
            second.restore(state, AssignmentChanges.START_FRESH);
            assertEquals(List.of("Muon: restored the state with AssignmentChanges.START_FRESH; 1 parameter starts "
                    + "afresh (no optimizer state): 'parameter 2 of group 0' (not in the state)"),
                    log.messages(Level.INFO));
        }
        assertTrue(a2.equal(a) && b2.equal(b), "the values of the parameters the state holds");
        assertTrue(c2.equal(c2Before), "the new parameter keeps its value");
        assertTrue(second.momentumBuffer(a2).orElseThrow().equal(first.momentumBuffer(a).orElseThrow()));
        assertTrue(second.momentumBuffer(c2).isEmpty());
        assertEquals(1, second.stepCount());
    }

    /**
     * A parameter moved to another group of a {@code Muon}: its parameters are known by place only, so the state
     * cannot say which one moved; the restore is refused under both {@link AssignmentChanges}, naming both groups
     * and the way on, never advising {@code START_FRESH}, and nothing changes.
     */
    @Test
    void muon_parameterMovedToAnotherGroup_isRefused_evenWithStartFresh_andChangesNothing() {
        torch.manual_seed(4);
        Tensor a = torch.randn(6, 4);
        Tensor b = torch.randn(4, 6);
        Tensor c = torch.randn(5, 5);
        Muon first = Muon.builder().addGroup(List.of(a, b), MuonConfig.defaults().withLr(0.02))
                .addGroup(List.of(c), MuonConfig.defaults().withLr(0.01)).build();
        stepWithRandomGradients(first, List.of(a, b, c));
        var state = first.state();
        Path file = dir.resolve("muon.ckpt");
        first.save(file);

        // b moves from group 0 to group 1 (to take group 1's lr).
        List<Tensor> resumed = List.of(torch.randn(6, 4), torch.randn(4, 6), torch.randn(5, 5));
        List<Tensor> before = resumed.stream().map(Tensor::clone).toList();
        Muon second = Muon.builder().addGroup(List.of(resumed.get(0)), MuonConfig.defaults().withLr(0.03))
                .addGroup(List.of(resumed.get(1), resumed.get(2)), MuonConfig.defaults().withLr(0.005)).build();
        String expected = "muon group 0 parameters: this optimizer 1, the state 2; muon group 1 parameters: this "
                + "optimizer 2, the state 1 (parameters moved between the groups of this Muon; its parameters are "
                + "known by their place only ('parameter i of group g'), so the state cannot say which one moved, "
                + "and AssignmentChanges.START_FRESH cannot restore it either: build the Muon with the groups as "
                + "saved (group 0: 2 parameters, group 1: 1 parameter) to load this state, or leave the state "
                + "unloaded to start every parameter afresh); nothing was changed";
        List<org.junit.jupiter.api.function.Executable> attempts = List.of(() -> second.restore(state),
                () -> second.restore(state, AssignmentChanges.START_FRESH), () -> second.load(file),
                () -> second.load(file, AssignmentChanges.START_FRESH));
        for (org.junit.jupiter.api.function.Executable attempt : attempts) {
            StateMismatchException e = assertThrows(StateMismatchException.class, attempt);
            assertTrue(e.getMessage().endsWith("(2 differences): " + expected), e.getMessage());
            for (int i = 0; i < resumed.size(); i++) {
                assertTrue(resumed.get(i).equal(before.get(i)), "parameter " + i + " changed in a refused restore");
                assertTrue(second.momentumBuffer(resumed.get(i)).isEmpty(), "parameter " + i + " has a momentum");
            }
            assertEquals(0, second.stepCount());
            assertEquals(0.03, second.lr(0));
            assertEquals(0.005, second.lr(1));
        }
    }

    private static void assertSameTensors(Map<String, Tensor> before, Map<String, Tensor> after, String what) {
        assertEquals(before.keySet(), after.keySet(), what);
        before.forEach((name, t) -> assertTrue(t.equal(after.get(name)), name + " changed in " + what));
    }

    /** One step of {@code opt} with a random gradient on each parameter, drawn in the list's order. */
    private static void stepWithRandomGradients(Muon opt, List<Tensor> params) {
        for (Tensor p : params) {
            p.mutable_grad().put(torch.randn(p.shape()));
        }
        opt.step();
    }
}
