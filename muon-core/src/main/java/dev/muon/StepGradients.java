package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GradientAveraging;
import dev.muon.distributed.ShardingConfig;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a {@link MuonAdamW} step makes of its gradients before it changes anything: each one checked
 * ({@link GradientCheck}), averaged over the ranks, and screened for NaN and Inf under the
 * {@link NonFinitePolicy}. Distributed, the ranks decide together whether the step applies, so that they skip, or
 * not, as one.
 */
final class StepGradients {
    private final Assignment assignment;
    private final List<String> muonNames;
    private final List<Tensor> muonParams;
    private final List<String> adamWNames;
    private final List<Tensor> adamWParams;
    private final NonFinitePolicy policy;
    /** The process group and how it shards, or null for a single process. */
    private final DistributedGroup group;
    private final ShardingConfig sharding;
    /** Both groups' names and handles, Muon's first: what a distributed step averages. */
    private final List<String> averagedNames;
    private final List<Tensor> averagedParams;

    StepGradients(Assignment assignment, AdamWGroup adamW, NonFinitePolicy policy, DistributedGroup group,
                  ShardingConfig sharding) {
        this.assignment = assignment;
        this.muonNames = assignment.names(OptimizerKind.MUON);
        this.muonParams = assignment.tensors(OptimizerKind.MUON);
        this.adamWNames = adamW.names;
        this.adamWParams = adamW.params;
        this.policy = policy;
        this.group = group;
        this.sharding = sharding;
        List<String> names = new ArrayList<>(muonNames);
        names.addAll(adamWNames);
        List<Tensor> params = new ArrayList<>(muonParams);
        params.addAll(adamWParams);
        this.averagedNames = List.copyOf(names);
        this.averagedParams = List.copyOf(params);
    }

    /** The policy this step's screen applies. */
    NonFinitePolicy policy() {
        return policy;
    }

    /**
     * A step's gradients, and whether the step applies.
     *
     * @param muon      the Muon parameters' gradients, in their order, null where none
     * @param adamW     the AdamW parameters' gradients ({@link AdamWGroup#params}' order), null where none
     * @param skipped   whether the step is skipped: no gradient on any rank, or a non-finite one
     * @param nonFinite what holds NaN or Inf, for the log ({@code "the gradient of parameter 'w'"}), or null
     * @param parameter the name of the parameter whose gradient is not finite here, or null
     */
    record Screened(List<Tensor> muon, List<Tensor> adamW, boolean skipped, String nonFinite, String parameter) {
    }

    /**
     * Checks, averages and screens this step's gradients.
     *
     * @throws IllegalStateException         under {@link NonFinitePolicy#RAISE} if a gradient is not finite, or if
     *                                       a gradient does not fit its parameter; nothing has changed then
     * @throws UnsupportedOperationException if a gradient is sparse or complex
     */
    Screened screen() {
        // Every gradient of both groups, before anything changes: libtorch's AdamW checks nothing, and the
        // non-finite scan below must not meet a sparse gradient first.
        List<Tensor> muonGrads = checked(muonNames, muonParams);
        List<Tensor> adamWGrads = checked(adamWNames, adamWParams);
        boolean peers = group != null && group.worldSize() > 1;
        boolean any = muonGrads.stream().anyMatch(Objects::nonNull) || adamWGrads.stream().anyMatch(Objects::nonNull);
        if (peers && sharding.averageGradients()) {
            // Refuses gradients present on some ranks only, so `any` is the same on every rank after it.
            GradientAveraging.averageGradients(group, averagedNames, averagedParams);
        } else if (peers) {
            // Without averaging, ranks hold different gradients: whether any rank has one is decided together.
            any = group.allReduceSum(new long[]{any ? 1 : 0}, "the gradient-presence check")[0] != 0;
        }
        if (!any) {
            // Nothing to apply: not counted, so that schedules keyed to stepCount() do not advance on nothing.
            return new Screened(muonGrads, adamWGrads, true, null, null);
        }
        if (policy != NonFinitePolicy.IGNORE) {
            String bad = firstNonFinite();
            // Without averaging, ranks see different gradients: they must still skip, or not, together.
            boolean elsewhere = peers && !sharding.averageGradients() && group.allReduceSum(
                    new long[]{bad == null ? 0 : 1}, "the non-finite gradient check")[0] != 0;
            if (bad != null || elsewhere) {
                String what = bad != null ? "the gradient of parameter '" + bad + "'" : "a gradient on another rank";
                if (policy == NonFinitePolicy.RAISE) {
                    throw new IllegalStateException(what + " holds NaN or Inf (nonFinitePolicy RAISE); "
                            + "nothing was changed");
                }
                return new Screened(muonGrads, adamWGrads, true, what, bad);
            }
        }
        return new Screened(muonGrads, adamWGrads, false, null, null);
    }

    /** Checks every gradient of a group; returns them, null where a parameter has none. */
    private static List<Tensor> checked(List<String> names, List<Tensor> params) {
        List<Tensor> grads = new ArrayList<>(params.size());
        for (int i = 0; i < params.size(); i++) {
            grads.add(GradientCheck.usable(params.get(i), "MuonAdamW", "parameter '" + names.get(i) + "'"));
        }
        return grads;
    }

    /** The first parameter, in table order, whose gradient is not all finite; null if none. */
    private String firstNonFinite() {
        List<Tensor> grads = new ArrayList<>();
        for (Assignment.Decision d : assignment.decisions()) {
            if (!d.isAlias()) {
                grads.add(d.tensor().grad());
            }
        }
        // One cheap pass over everything; the per-tensor scan runs only on a step that will not be applied.
        if (NonFiniteScan.allFinite(grads)) {
            return null;
        }
        for (Assignment.Decision d : assignment.decisions()) {
            if (d.isAlias()) {
                continue;
            }
            Tensor grad = d.tensor().grad();
            if (grad.defined() && NonFiniteScan.hasNonFinite(grad)) {
                return d.name();
            }
        }
        return null;
    }
}
