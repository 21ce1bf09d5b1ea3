package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.Float64Update;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;

/**
 * One cell of the combination table of {@code docs/api.md}: two features, the config, parameters, row splits and
 * QK-Clip hook they make, the optimizer built from them, and each step's gradients. {@link CombinationTableTest}
 * checks every cell against a float64 reference; the state-storage worker ({@code StateStorageEqualityWorker}) runs
 * every cell at W = 1, 2 and 3 with each {@link StateStorage} and compares them bit for bit. Everything is drawn from
 * one {@link Random} in a fixed order, so two runs of a cell see the same numbers.
 */
public final class CombinationCase {
    /** The features of the table, each a change to the config, the parameters or the optimizer. */
    public enum Feature {
        NORMUON, ROW_SPLIT, CONV, STACKED, BATCHING, SHARDED, QK_CLIP, NON_FINITE, BF16_NS, GRAM, SYMMETRIC,
        CAUTIOUS_DECAY, BF16_MOMENTUM, HYPERBALL, RADIAL_BRAKE, RELATIVE_UPDATE, UPDATE_FLOOR, MUOWN, AOL
    }

    /** The weight-update hooks: a group has at most one. */
    private static final Set<Feature> HOOKS = EnumSet.of(Feature.HYPERBALL, Feature.RADIAL_BRAKE,
            Feature.RELATIVE_UPDATE, Feature.UPDATE_FLOOR);

    /** The steps a cell runs. */
    public static final int STEPS = 3;
    /** QK-Clip's threshold. */
    public static final double TAU = 100;

    final Set<Feature> features;
    final MuonConfig config;
    final Map<String, long[]> shapes = new LinkedHashMap<>();
    final Map<String, RowSplit> splits = new LinkedHashMap<>();
    /** Whether QK-Clip runs on the fused QKV weight of the row split. */
    final boolean fusedClip;
    /** The attention logits QK-Clip is told each step. */
    final double[] logits;

    private CombinationCase(Set<Feature> f) {
        this.features = f;
        MuonConfig c = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1).withMomentum(0.9)
                .withNsPrecision(f.contains(Feature.BF16_NS) ? NsPrecision.BFLOAT16 : NsPrecision.FLOAT64)
                .withBatchSameShape(f.contains(Feature.BATCHING))
                .withConvWeights(ConvWeights.FLATTEN).withStackedWeights(StackedWeights.BATCH)
                .withNsAlgorithm(f.contains(Feature.GRAM) ? NsAlgorithm.GRAM
                        : f.contains(Feature.SYMMETRIC) ? NsAlgorithm.SYMMETRIC : NsAlgorithm.AUTO)
                .withCautiousWeightDecay(f.contains(Feature.CAUTIOUS_DECAY))
                .withMomentumPrecision(f.contains(Feature.BF16_MOMENTUM) ? MomentumPrecision.BFLOAT16
                        : MomentumPrecision.PARAMETER);
        if (f.contains(Feature.NORMUON)) {
            c = c.withNorMuon(0.9, 1e-3);
        }
        if (f.contains(Feature.HYPERBALL)) {
            c = c.withWeightDecay(0).withHyperball(HyperballConfig.defaults());
        }
        if (f.contains(Feature.RADIAL_BRAKE)) {
            c = c.withRadialBrake(new RadialBrakeConfig(0.5, 0.75, 1e-12));
        }
        if (f.contains(Feature.RELATIVE_UPDATE)) {
            c = c.withRelativeUpdate(RelativeUpdateConfig.defaults());
        }
        if (f.contains(Feature.UPDATE_FLOOR)) {
            // Per row, above the plain step's ratio at this lr, so that it acts on every row: the floor is per
            // unit of lr, 2.5 at lr 0.02 a step of at least 0.05 of each row's norm.
            c = c.withUpdateFloor(new UpdateFloorConfig(2.5, true, 1e-12));
        }
        if (f.contains(Feature.AOL)) {
            c = c.withAol();
        }
        if (f.contains(Feature.MUOWN)) {
            c = c.withNesterov(false).withMuown(MuownConfig.defaults());
        }
        this.config = c;
        shapes.put("layer.a.weight", new long[]{6, 4});
        shapes.put("layer.b.weight", new long[]{5, 7});
        if (f.contains(Feature.ROW_SPLIT)) {
            shapes.put("attn.qkv.weight", new long[]{12, 4});
            splits.put("attn.qkv.weight", RowSplit.splitRows(4, 4, 4));
        }
        if (f.contains(Feature.CONV)) {
            shapes.put("conv.weight", new long[]{4, 2, 3, 3});
            if (f.contains(Feature.ROW_SPLIT)) {
                splits.put("conv.weight", RowSplit.splitRows(1, 3));
            }
        }
        if (f.contains(Feature.STACKED)) {
            shapes.put("experts.weight", new long[]{3, 4, 5});
            if (f.contains(Feature.ROW_SPLIT)) {
                splits.put("experts.weight", RowSplit.perHead(2));
                // Unequal blocks on a stack: cut alike in each matrix, one block after another.
                shapes.put("experts.unequal.weight", new long[]{2, 6, 5});
                splits.put("experts.unequal.weight", RowSplit.splitRows(2, 4));
            }
        }
        if (f.contains(Feature.BATCHING)) {
            for (int k = 0; k < 3; k++) {
                shapes.put("s." + k + ".weight", new long[]{4, 4});
            }
        }
        this.fusedClip = f.contains(Feature.QK_CLIP) && f.contains(Feature.ROW_SPLIT);
        if (f.contains(Feature.QK_CLIP) && !fusedClip) {
            shapes.put("attn.q.weight", new long[]{8, 6});
            shapes.put("attn.k.weight", new long[]{8, 6});
        }
        this.logits = fusedClip ? new double[]{200} : new double[]{150, 80};
    }

    /**
     * The cell of two features.
     *
     * @param a a feature
     * @param b another
     * @return the cell
     */
    public static CombinationCase of(Feature a, Feature b) {
        return new CombinationCase(EnumSet.of(a, b));
    }

    /**
     * The pairs that are refused, each for a stated reason: two values of one setting ({@code nsAlgorithm}, or two
     * weight-update hooks: a group has one); and Hyperball with cautious weight decay, a weight decay, which the
     * sphere replaces (it needs weight decay 0, with which cautious decay would change nothing).
     */
    static boolean refusedPair(Feature a, Feature b) {
        Set<Feature> f = EnumSet.of(a, b);
        return f.equals(EnumSet.of(Feature.GRAM, Feature.SYMMETRIC))
                || f.equals(EnumSet.of(Feature.HYPERBALL, Feature.CAUTIOUS_DECAY))
                || HOOKS.containsAll(f) && f.size() == 2
                || f.contains(Feature.MUOWN) && MUOWN_REFUSED.containsKey(a == Feature.MUOWN ? b : a);
    }

    /**
     * What Muown is refused with, and why: the message each refusal starts with ({@code CombinationTableTest} checks
     * each). Conv filters and stacks: Muown is defined for 2-D weights (one magnitude per row of a matrix).
     * Cautious decay, bfloat16 momentum, Hyperball and the other weight hooks: refused when the config is made
     * (Muown decays its row magnitudes, keeps its momentum in float32, and learns the norms the sphere would fix;
     * a hook's change of the weight's norm or step is undone by Muown's next step). QK-Clip: Muown writes
     * each row's magnitude back from its own state at the next step, which would undo the clip.
     */
    static final Map<Feature, String> MUOWN_REFUSED = Map.of(
            Feature.CONV, "muown needs 2-D parameters",
            Feature.STACKED, "muown needs 2-D parameters",
            Feature.CAUTIOUS_DECAY, "cautiousWeightDecay must be false with muown",
            Feature.BF16_MOMENTUM, "momentumPrecision must be PARAMETER with muown",
            Feature.HYPERBALL, "hyperball must be off with muown",
            Feature.RADIAL_BRAKE, "radialBrake must be off with muown",
            Feature.RELATIVE_UPDATE, "relativeUpdate must be off with muown",
            Feature.UPDATE_FLOOR, "updateFloor must be off with muown",
            Feature.QK_CLIP, "qkClip cannot rescale parameter");

    /**
     * Every pair of the table that is not refused, in the table's order.
     *
     * @return the pairs
     */
    public static List<Feature[]> pairs() {
        List<Feature[]> pairs = new ArrayList<>();
        Feature[] all = Feature.values();
        for (int a = 0; a < all.length; a++) {
            for (int b = a + 1; b < all.length; b++) {
                if (!refusedPair(all[a], all[b])) {
                    pairs.add(new Feature[]{all[a], all[b]});
                }
            }
        }
        return pairs;
    }

    /** Whether the cell has a feature. */
    boolean has(Feature feature) {
        return features.contains(feature);
    }

    /** The initial values of every parameter, drawn in the order of the shapes. */
    Map<String, double[]> initialValues(Random random) {
        Map<String, double[]> values = new LinkedHashMap<>();
        shapes.forEach((name, shape) -> values.put(name, Float64Update.gaussian(random, shape)));
        return values;
    }

    /** Leaf float64 tensors of the values, requiring gradients. */
    Map<String, Tensor> parameters(Map<String, double[]> values) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        values.forEach((name, v) -> named.put(name, Tensors.of(v, shapes.get(name), ScalarType.Double)
                .requires_grad_(true)));
        return named;
    }

    /** The QK-Clip hook of the cell, or null without QK-Clip. */
    QkClip clip(Map<String, Tensor> named) {
        if (!has(Feature.QK_CLIP)) {
            return null;
        }
        QkClip.Builder builder = QkClip.builder(named).tau(TAU);
        return fusedClip ? builder.fusedLayer("attn", "attn.qkv.weight", QkClip.Heads.of(1, 4), 0, 4).build()
                : builder.layer("attn", "attn.q.weight", "attn.k.weight", QkClip.Heads.of(2, 4)).build();
    }

    /**
     * The optimizer of the cell: {@link MuonAdamW} with everything on Muon for the non-finite policy, else
     * {@link Muon}.
     *
     * @param named     the parameters
     * @param clip      the QK-Clip hook, or null
     * @param group     the group to shard over, or null
     * @param sharding  how to shard, with a group
     * @param storage   where the Muon state lives
     * @param transfers for {@link StateStorage#hostMemory()} on CPU parameters: the transfers of a CPU standing in
     *                  for the accelerator; null otherwise
     * @return the optimizer
     */
    TrainingOptimizer build(Map<String, Tensor> named, QkClip clip, DistributedGroup group, ShardingConfig sharding,
                            StateStorage storage, DeviceTransfers transfers) {
        if (has(Feature.NON_FINITE)) {
            MuonAdamW.Builder builder = MuonAdamW.builder(named).muon(config).muonWhen((n, t) -> true)
                    .outputLayerOnAdamW(false).nonFinitePolicy(NonFinitePolicy.SKIP).muonStateStorage(storage);
            splits.forEach(builder::rowSplit);
            ifGiven(clip, builder::qkClip);
            ifGiven(group, g -> builder.distributed(g, sharding));
            ifGiven(transfers, builder::cpuAsAccelerator);
            return builder.build();
        }
        Muon.Builder builder = Muon.builder().addGroup(named.values(), config).stateStorage(storage);
        splits.forEach((name, split) -> builder.rowSplit(named.get(name), split));
        ifGiven(clip, builder::qkClip);
        ifGiven(group, g -> builder.distributed(g, sharding));
        ifGiven(transfers, builder::cpuAsAccelerator);
        return builder.build();
    }

    /** Sets an optional part of a build (both optimizers' builders take the same ones) only where it is given. */
    private static <T> void ifGiven(T value, Consumer<T> set) {
        if (value != null) {
            set.accept(value);
        }
    }

    /** Whether a step (from 1) has a NaN in one gradient: the non-finite policy skips it. */
    boolean poisoned(int step) {
        return has(Feature.NON_FINITE) && step == 2;
    }

    /**
     * Draws a step's gradients, in the order of the parameters, and gives them to the parameters; a poisoned step
     * has a NaN in {@code layer.a.weight}'s.
     *
     * @return the gradients drawn, by name
     */
    Map<String, double[]> gradients(Random random, int step, Map<String, Tensor> named) {
        Map<String, double[]> grads = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : named.entrySet()) {
            double[] g = Float64Update.gaussian(random, shapes.get(e.getKey()));
            if (poisoned(step) && e.getKey().equals("layer.a.weight")) {
                g[0] = Double.NaN;
            }
            e.getValue().mutable_grad().put(Tensors.of(g, shapes.get(e.getKey()), ScalarType.Double));
            grads.put(e.getKey(), g);
        }
        return grads;
    }

    /** Tells the QK-Clip hook this step's logits. */
    void report(QkClip clip) {
        if (clip != null) {
            clip.report("attn", Tensors.of(logits, new long[]{logits.length}, ScalarType.Double));
        }
    }

    @Override
    public String toString() {
        List<Feature> sorted = new ArrayList<>(features);
        return sorted.get(0) + " with " + sorted.get(1);
    }
}
