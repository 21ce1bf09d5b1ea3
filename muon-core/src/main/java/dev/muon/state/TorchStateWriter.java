package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.BufferSpec;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RowSplit;
import dev.muon.OptimizerKind;
import dev.muon.UpdateRecipe;
import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes an {@link OptimizerState} as the dict of {@link TorchStateFile}'s layout: {@code torch.optim.Muon}'s and
 * {@code torch.optim.AdamW}'s state dicts, with muon-core's own keys beside them.
 */
final class TorchStateWriter {
    private TorchStateWriter() {
    }

    /** The dict {@code torch.load} returns for a state. */
    static Map<String, Object> toDict(OptimizerState state) {
        TorchStateFormat.Layout layout = TorchStateFormat.Layout.of(state);
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("format", TorchStateFormat.FORMAT);
        root.put("param_names", new ArrayList<Object>(layout.names()));
        root.put("step", state.step());
        Map<Object, Object> muonState = new LinkedHashMap<>();
        List<Object> muonGroups = new ArrayList<>();
        for (int g = 0; g < layout.muonGroups().size(); g++) {
            List<Integer> ids = layout.muonGroups().get(g);
            for (int id : ids) {
                ParameterEntry entry = layout.entries().get(id);
                if (!entry.buffers().isEmpty()) {
                    Map<String, Object> s = new LinkedHashMap<>();
                    for (BufferSpec d : state.declaredBuffers(entry.spec())) {
                        Tensor buffer = entry.buffer(d.key());
                        if (buffer == null) {
                            continue;
                        }
                        // torch.optim.Muon keeps its buffers in the parameter's dtype: a bfloat16-stored one is
                        // widened (exactly).
                        boolean widen = d.dtype() == BufferSpec.Dtype.BFLOAT16
                                && buffer.scalar_type().value != entry.spec().dtype().value;
                        s.put(d.torchKey(), widen ? buffer.to(entry.spec().dtype()) : buffer);
                    }
                    muonState.put((long) id, s);
                }
            }
            Map<String, Object> group = muonGroup(state.muonConfigs().get(g), g, ids);
            Map<String, Object> splits = new LinkedHashMap<>();
            for (int id : ids) {
                RowSplit split = layout.entries().get(id).spec().rowSplit();
                if (split != null) {
                    splits.put(layout.entries().get(id).name(), RowSplitEntries.toMap(split));
                }
            }
            if (!splits.isEmpty()) {
                group.put(TorchStateFormat.ROW_SPLITS_KEY, splits);
            }
            muonGroups.add(group);
        }
        root.put("muon", stateDict(muonState, muonGroups));
        if (state.adamWConfig() != null) {
            AdamWConfig c = state.adamWConfig();
            Map<Object, Object> adamWState = new LinkedHashMap<>();
            List<Object> adamWGroups = new ArrayList<>();
            for (int g = 0; g < layout.adamWGroups().size(); g++) {
                List<Integer> ids = layout.adamWGroups().get(g);
                for (int id : ids) {
                    AdamWMoments m = layout.entries().get(id).adamW();
                    if (m != null) {
                        Map<String, Object> s = new LinkedHashMap<>();
                        // PyTorch keeps AdamW's step as a float32 scalar tensor (since 1.12).
                        s.put("step", torch.scalar_tensor(new Scalar((double) m.step()),
                                new TensorOptions(torch.ScalarType.Float)));
                        s.put("exp_avg", m.expAvg());
                        s.put("exp_avg_sq", m.expAvgSq());
                        adamWState.put((long) id, s);
                    }
                }
                Map<String, Object> group = new LinkedHashMap<>();
                group.put("lr", c.lr());
                group.put("betas", PickleValues.Tuple.of(c.beta1(), c.beta2()));
                group.put("eps", c.eps());
                group.put("weight_decay", g == 0 ? c.weightDecay() : 0.0);
                group.put("amsgrad", false);
                group.put("maximize", false);
                group.put("foreach", null);
                group.put("capturable", false);
                group.put("differentiable", false);
                group.put("fused", null);
                // PyTorch 2.8+ runs AdamW as Adam with this flag, and a group that lacks it may load as Adam's L2
                // decay; older versions keep the key and ignore it.
                group.put("decoupled_weight_decay", true);
                group.put("params", longs(ids));
                adamWGroups.add(group);
            }
            root.put("adamw", stateDict(adamWState, adamWGroups));
        }
        return root;
    }

    private static Map<String, Object> stateDict(Map<Object, Object> state, List<Object> groups) {
        Map<String, Object> dict = new LinkedHashMap<>();
        dict.put("state", state);
        dict.put("param_groups", groups);
        return dict;
    }

    private static Map<String, Object> muonGroup(MuonConfig c, int g, List<Integer> ids) {
        if (!TorchStateFormat.oneTriple(c.nsCoefficients())) {
            throw new IllegalStateException("Muon group " + g + " cannot be exported: nsCoefficients must be one "
                    + "(a, b, c) used at every step, as torch.optim.Muon's ns_coefficients is; got "
                    + c.nsCoefficients().name());
        }
        String adjust = switch (c.adjustLr()) {
            case ORIGINAL -> "original";
            case MATCH_RMS_ADAMW -> "match_rms_adamw";
            default -> throw new IllegalStateException("Muon group " + g + " cannot be exported: adjustLr "
                    + c.adjustLr() + " has no torch.optim.Muon adjust_lr_fn (it takes 'original' or "
                    + "'match_rms_adamw')");
        };
        if (c.extraScale() != 1.0) {
            throw new IllegalStateException("Muon group " + g + " cannot be exported: extraScale must be 1 "
                    + "(torch.optim.Muon has no such factor), got " + c.extraScale());
        }
        Coefficients abc = c.nsCoefficients().at(0);
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("lr", c.lr());
        group.put("weight_decay", c.weightDecay());
        group.put("momentum", c.momentum());
        group.put("nesterov", c.nesterov());
        group.put("ns_coefficients", PickleValues.Tuple.of(abc.a(), abc.b(), abc.c()));
        group.put("eps", c.eps());
        group.put("ns_steps", (long) c.nsSteps());
        group.put("adjust_lr_fn", adjust);
        if (c.norMuon() != null) {
            Map<String, Object> norMuon = new LinkedHashMap<>();
            norMuon.put("beta2", c.norMuon().beta2());
            norMuon.put("eps", c.norMuon().eps());
            group.put(TorchStateFormat.NORMUON_GROUP_KEY, norMuon);
        }
        Map<String, Object> settings = new LinkedHashMap<>(ConfigFields.toJson(c, ConfigFields.MUON));
        settings.keySet().removeAll(TorchStateFormat.TORCH_MUON_FIELDS);
        group.put(TorchStateFormat.SETTINGS_GROUP_KEY, settings);
        group.put("params", longs(ids));
        return group;
    }

    private static List<Object> longs(List<Integer> ids) {
        List<Object> out = new ArrayList<>();
        ids.forEach(i -> out.add((long) i));
        return out;
    }
}
