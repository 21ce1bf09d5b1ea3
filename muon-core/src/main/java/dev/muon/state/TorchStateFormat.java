package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
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
 * What {@link TorchStateFile}'s reader and writer share: the keys of the layout, the file's view of a state
 * ({@link Layout}), and how messages show a value read from a file.
 */
final class TorchStateFormat {
    /** The format's name in the file. */
    static final String FORMAT = "dev.muon.torch_state_dict/1";
    static final String WHAT = "torch state dict";

    static final Set<String> TOP_KEYS = Set.of("format", "param_names", "step", "muon", "adamw");
    /**
     * muon-core's keys beside torch.optim.Muon's: a group's NorMuon settings and row splits (a parameter's other
     * state buffers are under their declarations' {@link dev.muon.BufferSpec#torchKey()}, NorMuon's second moment under
     * {@code normuon_second_moment}). {@code torch.optim.Muon.load_state_dict} keeps them and its step ignores them.
     */
    static final String NORMUON_GROUP_KEY = "normuon";
    static final String ROW_SPLITS_KEY = "row_splits";
    /**
     * A group's muon-core settings that {@code torch.optim.Muon} has no key for (its Newton–Schulz precision and
     * kernel, layouts, variants), by their names in muon-core's checkpoints ({@link ConfigFields}): so a file
     * carries every build setting, and an import into an optimizer built otherwise is refused, listing them. Files
     * without it (written before it existed, or by PyTorch) take these settings from the optimizer.
     */
    static final String SETTINGS_GROUP_KEY = "muon_core_settings";
    static final Set<String> MUON_OPTIONAL_KEYS = Set.of(NORMUON_GROUP_KEY, ROW_SPLITS_KEY,
            SETTINGS_GROUP_KEY);
    /** The fields of a Muon config that torch.optim.Muon's own keys carry (or that an export refuses). */
    static final Set<String> TORCH_MUON_FIELDS = Set.of("lr", "weightDecay", "momentum", "nesterov",
            "nsCoefficients", "eps", "nsSteps", "adjustLr", "extraScale");
    static final Set<String> MUON_GROUP_KEYS = Set.of("lr", "weight_decay", "momentum", "nesterov",
            "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn", "params");
    static final Set<String> ADAMW_GROUP_KEYS = Set.of("lr", "betas", "eps", "weight_decay", "params");
    /** Keys PyTorch versions add to an AdamW group that change nothing here, or must hold the value checked. */
    static final Set<String> ADAMW_OPTIONAL_KEYS = Set.of("amsgrad", "maximize", "foreach", "capturable",
            "differentiable", "fused", "decoupled_weight_decay");
    /** Keys any PyTorch group may carry: LR schedulers add {@code initial_lr}, named parameters {@code param_names}. */
    static final Set<String> ANY_GROUP_KEYS = Set.of("initial_lr", "param_names");

    private TorchStateFormat() {
    }

    /**
     * The file's view of a state: the trained parameters by index (tied names left out), and each Muon and AdamW
     * group's indices.
     */
    record Layout(List<ParameterEntry> entries, List<List<Integer>> muonGroups,
                          List<List<Integer>> adamWGroups) {
        static Layout of(OptimizerState state) {
            List<ParameterEntry> trained = state.entries().stream().filter(e -> !e.spec().isTied()).toList();
            List<List<Integer>> muon = new ArrayList<>();
            for (int g = 0; g < state.muonConfigs().size(); g++) {
                muon.add(indices(trained, OptimizerKind.MUON, g));
            }
            List<List<Integer>> adamW = new ArrayList<>();
            if (state.adamWConfig() != null) {
                adamW.add(indices(trained, OptimizerKind.ADAMW, 0));
                List<Integer> undecayed = indices(trained, OptimizerKind.ADAMW, 1);
                if (!undecayed.isEmpty()) {
                    adamW.add(undecayed);
                }
            }
            return new Layout(trained, muon, adamW);
        }

        private static List<Integer> indices(List<ParameterEntry> trained, OptimizerKind optimizer, int group) {
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < trained.size(); i++) {
                ParameterSpec s = trained.get(i).spec();
                if (s.optimizer() == optimizer && s.group() == group) {
                    out.add(i);
                }
            }
            return out;
        }

        List<String> names() {
            return entries.stream().map(ParameterEntry::name).toList();
        }
    }


    /** Whether torch.optim.Muon's ns_coefficients can express a schedule: one triple, no norm safety factor. */
    static boolean oneTriple(CoefficientSchedule schedule) {
        return schedule.repeating() && schedule.normalizationSafety() == 1.0;
    }


    static String show(Object value) {
        if (value == null) {
            return "None";
        }
        if (value instanceof String s) {
            return "'" + Messages.shortened(s) + "'";
        }
        if (value instanceof PickleValues.TensorRef t) {
            return "a tensor of shape " + Messages.shortened(t.size());
        }
        if (value instanceof PickleValues.Tuple) {
            return "a tuple";
        }
        if (value instanceof Map<?, ?>) {
            return "a dict";
        }
        if (value instanceof List<?>) {
            return "a list";
        }
        return Messages.shortened(String.valueOf(value));
    }

    static <T extends Comparable<T>> List<T> sorted(Set<T> set) {
        List<T> out = new ArrayList<>(new HashSet<>(set));
        out.sort(null);
        return out;
    }}
