package dev.muon;

import dev.muon.state.AdamWMoments;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringVector;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.Tuple;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The state of libtorch's {@code AdamW}, which the bindings expose only through its serialization archive
 * ({@code torch/optim/serialize.h}; {@code Optimizer::state()} is not bound): reading it back ({@link #read}) and
 * building the archive that loads a given state ({@link #archive}). Both archives are written and read by this
 * process only, through a temporary file (the bindings offer no in-memory way); no file from outside ever
 * reaches libtorch's archive reader.
 *
 * <p>The archive's layout: {@code pytorch_version} "1.5.0"; {@code state/<key>/step, exp_avg, exp_avg_sq};
 * {@code param_groups/size} and {@code param_groups/<g>/params/size, params/<j> = key, options/lr, betas, eps,
 * weight_decay, amsgrad}. libtorch keys a saved state by the parameter's TensorImpl address (the key of
 * {@link ParameterState#identityOf}), and maps a loaded key to its parameter by position in the group.
 */
final class LibtorchAdamWState {
    private LibtorchAdamWState() {
    }

    /**
     * Every parameter's moments, by TensorImpl address; parameters that never had a gradient are absent. The
     * tensors are copies of the caller's {@code PointerScope}.
     */
    static Map<Long, AdamWMoments> read(AdamW adamW) {
        OutputArchive out = new OutputArchive();
        adamW.save(out);
        InputArchive in = roundTrip(out);
        InputArchive state = new InputArchive();
        in.read("state", state);
        Map<Long, AdamWMoments> result = new HashMap<>();
        StringVector keys = state.keys();
        for (long i = 0; i < keys.size(); i++) {
            String key = keys.get(i).getString();
            InputArchive param = new InputArchive();
            state.read(key, param);
            Tensor expAvg = new Tensor();
            Tensor expAvgSq = new Tensor();
            IValue step = new IValue();
            param.read("exp_avg", expAvg);
            param.read("exp_avg_sq", expAvgSq);
            param.read("step", step);
            result.put(Long.parseLong(key), new AdamWMoments(expAvg, expAvgSq, step.toInt()));
        }
        return result;
    }

    /**
     * The archive that {@code AdamW::load} takes for parameters in {@code groups} (positions, one list per libtorch
     * group), with the moments of those that have some; the second group, if any, has weight decay 0.
     */
    static InputArchive archive(List<List<Integer>> groups, Map<Integer, AdamWMoments> moments, AdamWConfig config) {
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
        return roundTrip(out);
    }

    /** Keys from 1: libtorch turns them back into pointers, and 0 would be the null one. */
    private static String key(int index) {
        return Long.toString(index + 1L);
    }

    /** An archive this process wrote, read back through a temporary file that is removed afterwards. */
    private static InputArchive roundTrip(OutputArchive out) {
        Path file = null;
        try {
            file = Files.createTempFile("muon-archive", ".pt");
            out.save_to(file.toString());
            InputArchive in = new InputArchive();
            in.load_from(file.toString());
            return in;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // a leftover temporary file is harmless
                }
            }
        }
    }
}
