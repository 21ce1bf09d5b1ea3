package dev.muon.distributed;

import dev.muon.HyperballConfig;
import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.NonFinitePolicy;
import dev.muon.MuonConfig;
import dev.muon.AdamWConfig;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank of the distributed tests, started as its own JVM by {@link DistributedMuonAdamWTest}. It trains
 * {@link TinyClassifier} and writes its parameters and figures under the output folder, where the test compares
 * them with the single-process run that rank 0 writes as {@code reference.pt}.
 *
 * <p>Arguments: {@code scenario rank world port dir timeoutMillis [resumeFrom]}. Scenarios: {@code train} (the
 * exact, averaged and bfloat16 runs, a step-5 checkpoint, and a resume when {@code resumeFrom} is given),
 * {@code die} and {@code stall} (rank 1 halts or hangs at step 3), {@code errors} (rank 1 has one more
 * parameter; then a checkpoint that does not exist, and one that cannot be written).
 */
public final class ShardedTrainingWorker {
    static final int STEPS = 10;
    static final int SAVE_AT = 5;
    static final int FAULT_AT = 3;

    private ShardedTrainingWorker() {
    }

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        int rank = Integer.parseInt(args[1]);
        int world = Integer.parseInt(args[2]);
        int port = Integer.parseInt(args[3]);
        Path dir = Path.of(args[4]);
        long timeoutMillis = Long.parseLong(args[5]);
        // One thread in every process, the reference's included: the same GEMM blocking gives the same bits.
        torch.set_num_threads(1);
        GroupConfig config = GroupConfig.of("127.0.0.1", port, rank, world)
                .withTimeout(Duration.ofMillis(timeoutMillis));
        try (DistributedGroup group = DistributedGroup.join(config)) {
            switch (scenario) {
                case "train" -> train(group, dir, args.length > 6 ? Path.of(args[6]) : null);
                case "die", "stall" -> fault(group, dir, scenario);
                case "errors" -> errors(group, dir);
                case "qkclip" -> QkClipWorker.run(group, dir);
                case "reliability" -> ReliabilityWorker.run(group, dir);
                case "invariance" -> ShardingInvarianceWorker.run(group, dir, false);
                case "invariance-local" -> ShardingInvarianceWorker.run(group, dir, true);
                case "storage" -> dev.muon.StateStorageEqualityWorker.run(group, dir);
                case "conformance" -> dev.muon.ConformanceMatrixWorker.run(group, dir);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        }
        System.out.println("rank " + rank + " done");
        System.exit(0);
    }

    /** The errors scenario's Hyperball radius. */
    static final double SPHERE_RADIUS = 3.0;
    /** The matrices {@link #builder} gives Muon. */
    private static final List<String> MUON_NAMES = List.of("fc1.weight", "fc2.weight", "fc3.weight", "fc4.weight");

    static MuonAdamW.Builder builder(TinyClassifier model) {
        return MuonAdamW.builder(model.named())
                .muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3));
    }

    /** Trains from {@code first} to {@link #STEPS} on the whole batch or this rank's shard of it. */
    static void run(TinyClassifier model, MuonAdamW optimizer, int first, int shard, int shards,
                    Path saveAtStep5) {
        for (int step = first; step <= STEPS; step++) {
            optimizer.zeroGrad();
            model.lossAndBackward(step, shard, shards);
            optimizer.step();
            if (step == SAVE_AT && saveAtStep5 != null) {
                optimizer.save(saveAtStep5);
            }
        }
    }

    private static void train(DistributedGroup group, Path dir, Path resumeFrom) throws IOException {
        int rank = group.rank();
        int world = group.worldSize();
        if (rank == 0) {
            TinyClassifier model = new TinyClassifier(7, false);
            run(model, builder(model).build(), 1, 0, 1, null);
            TensorFiles.write(model.named(), dir.resolve("reference.pt"));
        }
        Map<String, String> stats = new HashMap<>();

        // Exact: every rank computes the whole batch's gradients, as under an outside DDP.
        TinyClassifier exact = new TinyClassifier(7, false);
        MuonAdamW sharded = builder(exact)
                .distributed(group, ShardingConfig.defaults().withAverageGradients(false)).build();
        run(exact, sharded, 1, 0, 1, dir.resolve("ckpt-w" + world + ".pt"));
        TensorFiles.write(exact.named(), dir.resolve("exact-rank" + rank + ".pt"));
        ShardPlan plan = sharded.shardPlan().orElseThrow();
        stats.put("muonStateBytes", String.valueOf(sharded.muonStateBytes()));
        stats.put("totalMuonStateBytes", String.valueOf(totalMuonBytes(sharded)));
        stats.put("stateImbalance", String.valueOf(plan.stateImbalance()));
        stats.put("imbalance", String.valueOf(plan.imbalance()));
        stats.put("owned", plan.ownedBy(rank).toString());

        // Averaged: each rank its shard of the batch, gradients averaged by the optimizer.
        TinyClassifier averaged = new TinyClassifier(7, false);
        run(averaged, builder(averaged).distributed(group, ShardingConfig.defaults()).build(), 1, rank, world,
                null);
        TensorFiles.write(averaged.named(), dir.resolve("averaged-rank" + rank + ".pt"));

        // bfloat16 sync of the updates.
        TinyClassifier bf16 = new TinyClassifier(7, false);
        run(bf16, builder(bf16).distributed(group, ShardingConfig.defaults().withAverageGradients(false)
                .withSyncPrecision(SyncPrecision.BFLOAT16)).build(), 1, 0, 1, null);
        TensorFiles.write(bf16.named(), dir.resolve("bf16-rank" + rank + ".pt"));

        // Plain Muon on the hidden matrices, distributed on its own (no MuonAdamW around it).
        if (rank == 0) {
            TinyClassifier model = new TinyClassifier(7, false);
            runMuonOnly(model, Muon.of(hiddenWeights(model), MuonConfig.defaults().withLr(0.02)), 0, 1);
            TensorFiles.write(model.named(), dir.resolve("muon-only-reference.pt"));
        }
        for (boolean average : new boolean[]{false, true}) {
            TinyClassifier model = new TinyClassifier(7, false);
            Muon muon = Muon.builder().addGroup(hiddenWeights(model), MuonConfig.defaults().withLr(0.02))
                    .distributed(group, ShardingConfig.defaults().withAverageGradients(average)).build();
            runMuonOnly(model, muon, average ? rank : 0, average ? world : 1);
            TensorFiles.write(model.named(), dir.resolve("muon-only-" + (average ? "averaged" : "exact")
                    + "-rank" + rank + ".pt"));
        }

        if (resumeFrom != null) {
            TinyClassifier resumed = new TinyClassifier(99, false);
            MuonAdamW optimizer = builder(resumed)
                    .distributed(group, ShardingConfig.defaults().withAverageGradients(false)).build();
            optimizer.load(resumeFrom);
            stats.put("resumedStep", String.valueOf(optimizer.stepCount()));
            run(resumed, optimizer, SAVE_AT + 1, 0, 1, null);
            TensorFiles.write(resumed.named(), dir.resolve("resumed-rank" + rank + ".pt"));
            if (rank == 0) {
                // W' = 1: the same file into a plain single-process optimizer.
                TinyClassifier plain = new TinyClassifier(99, false);
                MuonAdamW single = builder(plain).build();
                single.load(resumeFrom);
                run(plain, single, SAVE_AT + 1, 0, 1, null);
                TensorFiles.write(plain.named(), dir.resolve("resumed-single.pt"));
            }
        }
        writeStats(dir.resolve("stats-rank" + rank + ".txt"), stats);
    }

    private static List<Tensor> hiddenWeights(TinyClassifier model) {
        List<Tensor> weights = new ArrayList<>();
        model.named().forEach((name, t) -> {
            if (name.startsWith("fc") && name.endsWith(".weight")) {
                weights.add(t);
            }
        });
        return weights;
    }

    private static void runMuonOnly(TinyClassifier model, Muon muon, int shard, int shards) {
        for (int step = 1; step <= STEPS; step++) {
            model.module.zero_grad(true);
            model.lossAndBackward(step, shard, shards);
            muon.step();
        }
    }

    /** The momentum bytes of an unsharded optimizer over the same parameters, after one step. */
    private static long totalMuonBytes(MuonAdamW sharded) {
        long total = 0;
        for (var row : sharded.assignment().rows()) {
            if (row.optimizer() == dev.muon.OptimizerKind.MUON) {
                total += row.stateBytes();
            }
        }
        return total;
    }

    private static void fault(DistributedGroup group, Path dir, String scenario) throws Exception {
        TinyClassifier model = new TinyClassifier(7, false);
        MuonAdamW optimizer = builder(model).distributed(group, ShardingConfig.defaults()).build();
        for (int step = 1; step <= STEPS; step++) {
            if (step == FAULT_AT && group.rank() == 1) {
                if (scenario.equals("die")) {
                    Runtime.getRuntime().halt(3);
                }
                Thread.sleep(120_000);
            }
            optimizer.zeroGrad();
            model.lossAndBackward(step, group.rank(), group.worldSize());
            long start = System.nanoTime();
            try {
                optimizer.step();
            } catch (IllegalStateException e) {
                long waited = (System.nanoTime() - start) / 1_000_000;
                writeStats(dir.resolve("fault-rank" + group.rank() + ".txt"),
                        Map.of("message", e.getMessage().replace('\n', ' '), "waitedMillis", String.valueOf(waited),
                                "step", String.valueOf(step)));
                return;
            }
        }
    }

    private static void errors(DistributedGroup group, Path dir) throws IOException {
        Map<String, String> out = new HashMap<>();
        TinyClassifier odd = new TinyClassifier(7, group.rank() == 1);
        out.put("mismatch", message(() -> builder(odd).distributed(group, ShardingConfig.defaults()).build()));

        // A setting that changes a step's control flow differs on rank 1: refused at build, on both ranks.
        out.put("policyMismatch", message(() -> builder(new TinyClassifier(7, false))
                .nonFinitePolicy(group.rank() == 1 ? NonFinitePolicy.RAISE : NonFinitePolicy.SKIP)
                .distributed(group, ShardingConfig.defaults()).build()));

        // Hyperball at a fixed radius puts each Muon matrix on its sphere when the build completes: a build that the
        // ranks refuse (rank 1's policy differs) must leave every rank's parameters as they were, and one they
        // agree on must rescale them.
        MuonConfig sphere = MuonConfig.defaults().withLr(0.02).withWeightDecay(0)
                .withHyperball(HyperballConfig.radius(SPHERE_RADIUS));
        TinyClassifier onSphere = new TinyClassifier(7, false);
        Map<String, Tensor> unscaled = new HashMap<>();
        onSphere.named().forEach((k, v) -> unscaled.put(k, v.clone()));
        out.put("sphereMismatch", message(() -> builder(onSphere).muon(sphere)
                .nonFinitePolicy(group.rank() == 1 ? NonFinitePolicy.RAISE : NonFinitePolicy.SKIP)
                .distributed(group, ShardingConfig.defaults()).build()));
        List<Tensor> hidden = MUON_NAMES.stream().map(onSphere.named()::get).toList();
        out.put("muonSphereMismatch", message(() -> Muon.builder()
                .addGroup(hidden, sphere.withLr(group.rank() == 1 ? 0.03 : 0.02))
                .distributed(group, ShardingConfig.defaults()).build()));
        boolean unscaledAfterRefusals = true;
        for (var e : onSphere.named().entrySet()) {
            unscaledAfterRefusals &= e.getValue().equal(unscaled.get(e.getKey()));
        }
        out.put("unchangedAfterRefusedBuilds", String.valueOf(unscaledAfterRefusals));
        builder(onSphere).muon(sphere).distributed(group, ShardingConfig.defaults()).build();
        double offSphere = 0;
        for (String name : MUON_NAMES) {
            offSphere = Math.max(offSphere, Math.abs(onSphere.named().get(name).norm().item_double()
                    - SPHERE_RADIUS));
        }
        out.put("offSphereAfterAgreedBuild", String.valueOf(offSphere));

        // A gradient that is not contiguous on rank 1 only: every rank refuses to average, before any gradient changes.
        TinyClassifier averaged = new TinyClassifier(7, false);
        averaged.lossAndBackward(1, group.rank(), group.worldSize());
        Map<String, Tensor> params = averaged.named();
        if (group.rank() == 1) {
            Tensor g = params.get("fc2.weight").grad();
            params.get("fc2.weight").mutable_grad().put(g.t().contiguous().t());
        }
        Map<String, Tensor> gradsBefore = new HashMap<>();
        params.forEach((k, v) -> gradsBefore.put(k, v.grad().clone()));
        out.put("averageNotContiguous", message(() -> GradientAveraging.averageGradients(group,
                new ArrayList<>(params.keySet()), new ArrayList<>(params.values()))));
        boolean gradsUnchanged = true;
        for (var e : params.entrySet()) {
            gradsUnchanged &= e.getValue().grad().equal(gradsBefore.get(e.getKey()));
        }
        out.put("gradientsUnchangedAfterRefusedAverage", String.valueOf(gradsUnchanged));

        TinyClassifier model = new TinyClassifier(7, false);
        MuonAdamW optimizer = builder(model).distributed(group, ShardingConfig.defaults()).build();
        run(model, optimizer, 1, group.rank(), group.worldSize(), null);
        // Two valid checkpoints of this run with different content (steps 10 and 11), then back to step 10.
        Path contentA = dir.resolve("content-a.pt");
        Path contentB = dir.resolve("content-b.pt");
        optimizer.save(contentA);
        run(model, optimizer, STEPS, group.rank(), group.worldSize(), null);
        optimizer.save(contentB);
        optimizer.load(contentA);
        Map<String, org.bytedeco.pytorch.Tensor> before = new HashMap<>();
        model.named().forEach((k, v) -> before.put(k, v.clone()));
        long stateBefore = optimizer.muonStateBytes();

        // Rank 1 alone is given a file that does not exist: every rank must refuse, and none may change.
        Path missing = dir.resolve(group.rank() == 1 ? "missing.pt" : "ckpt-good.pt");
        if (group.rank() == 0) {
            TinyClassifier other = new TinyClassifier(5, false);
            MuonAdamW single = builder(other).build();
            run(other, single, 1, 0, 1, null);
            single.save(missing);
        }
        group.barrier("the test's checkpoint file");
        out.put("loadMissing", message(() -> optimizer.load(missing)));
        // Each rank reads a valid file, but not the same one: every rank must refuse, and none may change.
        out.put("loadDifferent", message(() -> optimizer.load(group.rank() == 0 ? contentA : contentB)));
        boolean unchanged = optimizer.stepCount() == STEPS && optimizer.muonStateBytes() == stateBefore;
        for (var e : model.named().entrySet()) {
            unchanged &= e.getValue().equal(before.get(e.getKey()));
        }
        out.put("unchangedAfterFailedLoad", String.valueOf(unchanged));

        out.put("saveUnwritable", message(() -> optimizer.save(dir.resolve("no-such-dir").resolve("x.pt"))));
        // The group still works after refused calls: one more checkpoint round trip.
        optimizer.save(dir.resolve("after-errors.pt"));
        optimizer.load(dir.resolve("after-errors.pt"));
        out.put("stepAfterErrors", String.valueOf(optimizer.stepCount()));
        writeStats(dir.resolve("errors-rank" + group.rank() + ".txt"), out);
    }

    /** What {@code call} throws, as one line: its class and message, or "no error". */
    static String message(Runnable call) {
        try {
            call.run();
            return "no error";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' ');
        }
    }

    static void writeStats(Path path, Map<String, String> stats) throws IOException {
        StringBuilder text = new StringBuilder();
        stats.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, path);
    }
}
