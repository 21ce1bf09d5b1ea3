package dev.muon;

import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.StringVector;
import org.bytedeco.pytorch.Tensor;

import java.util.HashMap;
import java.util.Map;

/**
 * A copy of libtorch AdamW's state for one parameter. The bindings do not expose {@code Optimizer::state()}, so
 * the state is read back through libtorch's own serialization ({@code AdamW::save}), whose {@code state} archive
 * is keyed by the parameter's TensorImpl address: the same key as {@link ParameterState#identityOf}.
 *
 * @param expAvg   the first moment m (a copy)
 * @param expAvgSq the second moment v (a copy)
 * @param step     the parameter's step count
 */
record AdamWMoments(Tensor expAvg, Tensor expAvgSq, long step) {

    /**
     * Every parameter's state, by TensorImpl address; parameters that never had a gradient are absent. The copies
     * belong to the caller's {@code PointerScope}.
     */
    static Map<Long, AdamWMoments> readAll(AdamW adamW) {
        OutputArchive out = new OutputArchive();
        adamW.save(out);
        InputArchive in = ArchiveRoundTrip.of(out);
        InputArchive state = new InputArchive();
        in.read("state", state);
        return read(state);
    }

    /** Parses the {@code state} archive written by libtorch's AdamW. */
    static Map<Long, AdamWMoments> read(InputArchive state) {
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
}
