package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.state.AdamWMoments;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The AdamW side of a {@link MuonAdamW}: libtorch's AdamW update ({@link AdamWUpdate}, bit for bit) over the
 * parameters the assignment puts on AdamW, with their moments and update counts. The parameters are in the order of
 * libtorch's one param group or, with {@code noWeightDecayBelow2D}, its two: the decayed parameters, then those
 * without decay ({@link #names}, {@link #params}). A parameter's moments are made at its first update, as libtorch
 * makes them. Made at build; a restore swaps in the moments a state holds ({@link #withMoments}, {@link #use}). It
 * remembers the lr of each parameter's last update.
 */
final class AdamWGroup {
    /** The AdamW parameters' names and handles, the decayed group first. */
    final List<String> names;
    final List<Tensor> params;
    /** How many of {@link #params}, from the first, are in the decayed group. */
    private final int decayedCount;
    /** Per parameter: the lr of its last update (NaN before one). */
    private final double[] lastLr;
    /** The denominators' reusable tensors, one per shape and dtype. */
    private final Scratch scratch = new Scratch();
    private Moments moments;

    /**
     * Every parameter's moments and update count, by position in {@link #params}; a parameter's moments are null
     * before its first update.
     */
    static final class Moments {
        private final Tensor[] expAvg;
        private final Tensor[] expAvgSq;
        private final long[] steps;

        private Moments(int size) {
            expAvg = new Tensor[size];
            expAvgSq = new Tensor[size];
            steps = new long[size];
        }
    }

    AdamWGroup(Assignment assignment) {
        List<Tensor> decayed = assignment.adamWTensors(true);
        List<String> byGroup = new ArrayList<>(assignment.adamWNames(true));
        byGroup.addAll(assignment.adamWNames(false));
        List<Tensor> tensorsByGroup = new ArrayList<>(decayed);
        tensorsByGroup.addAll(assignment.adamWTensors(false));
        this.names = List.copyOf(byGroup);
        this.params = List.copyOf(tensorsByGroup);
        // Without noWeightDecayBelow2D no parameter is in the undecayed list: every one decays.
        this.decayedCount = decayed.size();
        this.lastLr = new double[params.size()];
        Arrays.fill(lastLr, Double.NaN);
        this.moments = new Moments(params.size());
    }

    /**
     * One AdamW update of every parameter with a gradient, in libtorch's order, recording the lr each used; runs
     * under the caller's no-grad mode and {@code PointerScope}.
     *
     * @param grads  the gradients, in {@link #params}' order, null where none
     * @param config the hyperparameters
     */
    void step(List<Tensor> grads, AdamWConfig config) {
        AdamWUpdate.BiasCorrections corrections = null;
        long correctedFor = 0;
        for (int i = 0; i < params.size(); i++) {
            Tensor grad = grads.get(i);
            if (grad == null) {
                continue;
            }
            Tensor p = params.get(i);
            if (moments.expAvg[i] == null) {
                moments.expAvg[i] = NativeLifetime.outliveScope(torch.zeros_like(p));
                moments.expAvgSq[i] = NativeLifetime.outliveScope(torch.zeros_like(p));
            }
            long t = ++moments.steps[i];
            // Parameters updated together share their count: the corrections are taken once per count.
            if (corrections == null || t != correctedFor) {
                corrections = AdamWUpdate.BiasCorrections.of(config, t);
                correctedFor = t;
            }
            AdamWUpdate.apply(p, grad, moments.expAvg[i], moments.expAvgSq[i], config,
                    i < decayedCount ? config.weightDecay() : 0.0, corrections, scratch.like(p, p.scalar_type()));
            lastLr[i] = config.lr();
        }
    }

    /** Every updated AdamW parameter's moments, by tensor identity: handles on the live tensors. */
    Map<Long, AdamWMoments> moments() {
        Map<Long, AdamWMoments> result = new HashMap<>();
        for (int i = 0; i < params.size(); i++) {
            if (moments.expAvg[i] != null) {
                result.put(ParameterState.identityOf(params.get(i)),
                        new AdamWMoments(moments.expAvg[i], moments.expAvgSq[i], moments.steps[i]));
            }
        }
        return result;
    }

    /**
     * A copy of the {@code i}-th parameter's state ({@link MuonAdamW#adamWState}); empty before its first update.
     */
    Optional<AdamWState> state(int i) {
        if (moments.expAvg[i] == null) {
            return Optional.empty();
        }
        try (PointerScope scope = new PointerScope()) {
            return Optional.of(new AdamWState(NativeLifetime.outliveScope(moments.expAvg[i].clone()),
                    NativeLifetime.outliveScope(moments.expAvgSq[i].clone()), moments.steps[i], lastLr[i]));
        }
    }

    /**
     * Copies of the moments of a checked state, by this group's positions, for {@link #use}; nothing here changes
     * until then.
     */
    Moments withMoments(OptimizerState candidate) {
        Moments fresh = new Moments(params.size());
        try (PointerScope scope = new PointerScope()) {
            for (ParameterEntry e : candidate.entries()) {
                int position = names.indexOf(e.name());
                AdamWMoments m = e.adamW();
                if (position >= 0 && m != null) {
                    fresh.expAvg[position] = NativeLifetime.outliveScope(m.expAvg().detach().clone());
                    fresh.expAvgSq[position] = NativeLifetime.outliveScope(m.expAvgSq().detach().clone());
                    fresh.steps[position] = m.step();
                }
            }
        }
        return fresh;
    }

    /**
     * Restores a checked state's AdamW parameter values and takes the moments {@link #withMoments} copied from it:
     * cannot fail. A restored state does not hold the lrs of the last updates.
     */
    void use(Moments fresh, OptimizerState checked) {
        for (ParameterEntry e : checked.entries()) {
            if (e.value() != null && e.spec().optimizer() == OptimizerKind.ADAMW) {
                params.get(names.indexOf(e.name())).copy_(e.value());
            }
        }
        moments = fresh;
        Arrays.fill(lastLr, Double.NaN);
    }
}
