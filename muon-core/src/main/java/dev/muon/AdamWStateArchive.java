package dev.muon;

import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.Tuple;
import org.bytedeco.pytorch.global.torch;

import java.util.List;
import java.util.Map;

/**
 * Builds the archive that libtorch's {@code AdamW::load} takes from given moments, the inverse of
 * {@link AdamWMoments#readAll}: the bindings do not expose {@code Optimizer::state()}, so state that did not come
 * from a libtorch save enters an {@code AdamW} only through an archive of the layout its {@code save} writes
 * ({@code torch/optim/serialize.h}): {@code pytorch_version} "1.5.0"; {@code state/<key>/step, exp_avg,
 * exp_avg_sq}; {@code param_groups/size} and {@code param_groups/<g>/params/size, params/<j> = key,
 * options/lr, betas, eps, weight_decay, amsgrad}. libtorch maps a key to the optimizer's parameter by its position
 * in the group, so any distinct keys do.
 */
final class AdamWStateArchive {
    private AdamWStateArchive() {
    }

    /**
     * The archive for parameters in {@code groups} (indices, one list per libtorch group), with the moments of
     * those that have some; the second group, if any, has weight decay 0.
     */
    static InputArchive of(List<List<Integer>> groups, Map<Integer, AdamWMoments> moments, AdamWConfig config) {
        OutputArchive out = new OutputArchive();
        out.write("pytorch_version", new IValue("1.5.0"));
        OutputArchive state = new OutputArchive();
        for (List<Integer> group : groups) {
            for (int index : group) {
                AdamWMoments m = moments.get(index);
                if (m != null) {
                    OutputArchive param = new OutputArchive();
                    param.write("step", new IValue(m.step()));
                    param.write("exp_avg", m.expAvg().detach().clone());
                    param.write("exp_avg_sq", m.expAvgSq().detach().clone());
                    state.write(key(index), param);
                }
            }
        }
        out.write("state", state);
        OutputArchive paramGroups = new OutputArchive();
        paramGroups.write("param_groups/size", torch.scalar_tensor(new Scalar(groups.size()),
                new TensorOptions(torch.ScalarType.Long)));
        for (int g = 0; g < groups.size(); g++) {
            OutputArchive group = new OutputArchive();
            List<Integer> indices = groups.get(g);
            group.write("params/size", torch.scalar_tensor(new Scalar(indices.size()),
                    new TensorOptions(torch.ScalarType.Long)));
            for (int j = 0; j < indices.size(); j++) {
                group.write("params/" + j, new IValue(key(indices.get(j))));
            }
            OutputArchive options = new OutputArchive();
            options.write("lr", new IValue(config.lr()));
            options.write("betas", new IValue(Tuple.create(new IValue(config.beta1()), new IValue(config.beta2()))));
            options.write("eps", new IValue(config.eps()));
            options.write("weight_decay", new IValue(g == 0 ? config.weightDecay() : 0.0));
            options.write("amsgrad", new IValue(false));
            group.write("options", options);
            paramGroups.write("param_groups/" + g, group);
        }
        out.write("param_groups", paramGroups);
        return ArchiveRoundTrip.of(out);
    }

    /** Keys from 1: libtorch turns them back into pointers, and 0 would be the null one. */
    private static String key(int index) {
        return Long.toString(index + 1L);
    }
}
