package dev.muon;

import dev.muon.internal.Messages;
import dev.muon.internal.NativeLifetime;
import dev.muon.state.AdamWMoments;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.OptimizerParamGroup;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The AdamW side of a {@link MuonAdamW}: libtorch's {@code AdamW} over the parameters the assignment puts on AdamW,
 * in one param group, or, with {@code noWeightDecayBelow2D}, two: the decayed parameters, then those without
 * decay. libtorch keeps its groups' parameters one after the other, and a state maps its moments back by position,
 * so {@link #names} and {@link #params} are in that order. Made at build, and again, holding a state's moments, at a
 * restore; it remembers the lr of each parameter's last update.
 */
final class AdamWGroup {
    /** The AdamW parameters' names and handles, the decayed group first. */
    final List<String> names;
    final List<Tensor> params;
    private final List<Tensor> decayed;
    private final List<Tensor> undecayed;
    private final boolean twoGroups;
    /** Per parameter: the lr of its last update (NaN before one). */
    private final double[] lastLr;
    /** null when no parameter is on AdamW. */
    private AdamW adamW;

    AdamWGroup(Assignment assignment, AdamWConfig config) {
        this.decayed = assignment.adamWTensors(true);
        this.undecayed = assignment.adamWTensors(false);
        this.twoGroups = assignment.noDecayBelow2D();
        List<String> byGroup = new ArrayList<>(assignment.adamWNames(true));
        byGroup.addAll(assignment.adamWNames(false));
        List<Tensor> tensorsByGroup = new ArrayList<>(decayed);
        tensorsByGroup.addAll(undecayed);
        this.names = List.copyOf(byGroup);
        this.params = List.copyOf(tensorsByGroup);
        this.lastLr = new double[params.size()];
        Arrays.fill(lastLr, Double.NaN);
        this.adamW = create(config);
    }

    private AdamW create(AdamWConfig config) {
        if (params.isEmpty()) {
            return null;
        }
        try (PointerScope scope = new PointerScope()) {
            if (!twoGroups) {
                return NativeLifetime.outliveScope(new AdamW(new TensorVector(params.toArray(new Tensor[0])),
                        config.toOptions()));
            }
            // Both groups exist even when one is empty, so that every checkpoint of this optimizer has two.
            AdamW both = NativeLifetime.outliveScope(new AdamW(new TensorVector(
                    decayed.toArray(new Tensor[0])), config.toOptions()));
            // A group added without options takes a copy of the defaults (the options above); only its decay
            // differs. The bindings hand the options out as the base type: the object is libtorch's AdamWOptions.
            both.add_param_group(new OptimizerParamGroup(new TensorVector(undecayed.toArray(new Tensor[0]))));
            new AdamWOptions(both.param_groups().get(1).options()).weight_decay().put(0.0);
            return both;
        }
    }

    /** One AdamW step of every parameter with a gradient, recording the lr each updated parameter used. */
    void step(List<Tensor> grads, double lr) {
        if (adamW != null) {
            adamW.step();
        }
        for (int i = 0; i < params.size(); i++) {
            if (grads.get(i) != null) {
                lastLr[i] = lr;
            }
        }
    }

    /** Sets every param group's lr. */
    void setLr(double lr) {
        if (adamW == null) {
            return;
        }
        try (PointerScope scope = new PointerScope()) {
            OptimizerParamGroupVector groups = adamW.param_groups();
            for (long g = 0; g < groups.size(); g++) {
                groups.get(g).options().set_lr(lr);
            }
        }
    }

    /** Every AdamW parameter's moments, by tensor identity, through a serialization round trip. */
    Map<Long, AdamWMoments> moments() {
        return adamW == null ? Map.of() : LibtorchAdamWState.read(adamW);
    }

    /**
     * A copy of the {@code i}-th parameter's state ({@link MuonAdamW#adamWState}); empty before its first update.
     */
    Optional<AdamWState> state(int i) {
        if (adamW == null) {
            return Optional.empty();
        }
        try (PointerScope scope = new PointerScope()) {
            AdamWMoments m = moments().get(ParameterState.identityOf(params.get(i)));
            if (m == null) {
                return Optional.empty();
            }
            return Optional.of(new AdamWState(NativeLifetime.outliveScope(m.expAvg().clone()),
                    NativeLifetime.outliveScope(m.expAvgSq().clone()), m.step(), lastLr[i]));
        }
    }

    /**
     * A fresh libtorch AdamW over these parameters, holding the moments of a checked state, with the state's
     * config (this group's {@code current} one where the state has none); nothing here changes until
     * {@link #use}.
     *
     * @throws IllegalStateException if libtorch's AdamW refuses the moments
     */
    AdamW withMoments(OptimizerState candidate, AdamWConfig current, String source) {
        AdamW fresh = create(candidate.adamWConfig() == null ? current : candidate.adamWConfig());
        if (fresh == null) {
            return null;
        }
        Map<Integer, AdamWMoments> moments = new HashMap<>();
        for (ParameterEntry e : candidate.entries()) {
            int position = names.indexOf(e.name());
            if (position >= 0 && e.adamW() != null) {
                moments.put(position, e.adamW());
            }
        }
        List<List<Integer>> groups = new ArrayList<>();
        groups.add(positions(0, decayed.size()));
        if (twoGroups) {
            groups.add(positions(decayed.size(), names.size()));
        }
        try {
            fresh.load(LibtorchAdamWState.archive(groups, moments, candidate.adamWConfig()));
        } catch (RuntimeException e) {
            throw new IllegalStateException(source + ": libtorch's AdamW cannot take its state: "
                    + Messages.firstLine(e) + "; nothing was changed", e);
        }
        return fresh;
    }

    /**
     * Restores a checked state's AdamW parameter values and takes the AdamW {@link #withMoments} made for it:
     * cannot fail. A restored state does not hold the lrs of the last updates.
     */
    void use(AdamW fresh, OptimizerState checked) {
        for (ParameterEntry e : checked.entries()) {
            if (e.value() != null && e.spec().optimizer() == OptimizerKind.ADAMW) {
                params.get(names.indexOf(e.name())).copy_(e.value());
            }
        }
        adamW = fresh;
        Arrays.fill(lastLr, Double.NaN);
    }

    private static List<Integer> positions(int from, int to) {
        List<Integer> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(i);
        }
        return out;
    }
}
