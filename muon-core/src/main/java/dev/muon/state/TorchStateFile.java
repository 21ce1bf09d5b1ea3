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

import java.nio.channels.Channels;
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
 * PyTorch's optimizer state file: an {@link OptimizerState} as the dict that Python's
 * {@code torch.load(f, weights_only=True)} returns, with a {@code torch.optim.Muon} state dict for the Muon groups
 * and a {@code torch.optim.AdamW} state dict for the AdamW groups (see {@code docs/checkpoints.md},
 * "PyTorch-compatible state"):
 * <pre>
 *   format       "dev.muon.torch_state_dict/1"
 *   param_names  [name of parameter 0, name of parameter 1, ...]     named_parameters() order, tied names left out
 *   step         the optimizer's step count
 *   muon         {"state": {i: {"momentum_buffer": T}}, "param_groups": [{lr, weight_decay, momentum, nesterov,
 *                 ns_coefficients, eps, ns_steps, adjust_lr_fn, muon_core_settings, params}]}
 *   adamw        {"state": {i: {"step": float32 scalar T, "exp_avg": T, "exp_avg_sq": T}}, "param_groups": [{lr,
 *                 betas, eps, weight_decay, amsgrad, maximize, foreach, capturable, differentiable, fused,
 *                 decoupled_weight_decay, params}]}
 * </pre>
 * Reading never runs anything from the file: the zip and its pickle go through a weights-only reader (an
 * allow-list of the tensor-rebuild function, {@code OrderedDict} and five storage types; everything else refused
 * by name), and every tensor is checked (its shape and dtype against the optimizer's parameter, its storage
 * record's length, its view's bounds) before libtorch sees its bytes. Like PyTorch's {@code load_state_dict}, a
 * read maps the file's parameter ids to the optimizer's parameters by position within the groups, so a file
 * written from Python's own optimizers (ids from 0 in each) reads as well as one written here. The file holds no
 * parameter values. Beside the settings {@code torch.optim} has, each Muon group carries muon-core's others under
 * {@code muon_core_settings} (Newton–Schulz precision and kernel, layouts, variants, by their checkpoint names),
 * which {@code torch.optim.Muon.load_state_dict} keeps and its step ignores; a file without them (PyTorch's own,
 * or written before they were carried) takes them from the optimizer's own state, the template.
 */
public final class TorchStateFile {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The format's name in the file. */
    public static final String FORMAT = TorchStateFormat.FORMAT;

    private TorchStateFile() {
    }

    /**
     * Writes a state, replacing {@code file} atomically.
     *
     * @param file  the target
     * @param state the state (its parameter values are not written)
     * @throws IllegalStateException         if a Muon config has no {@code torch.optim.Muon} equivalent (a per-step
     *                                       coefficient schedule, {@code adjustLr} other than {@code ORIGINAL} or
     *                                       {@code MATCH_RMS_ADAMW}, {@code extraScale} other than 1); nothing is
     *                                       written
     * @throws UnsupportedOperationException if the state holds what {@code torch.optim.Muon} has no place for
     *                                       (NorMuon, row splits); nothing is written
     * @throws java.io.UncheckedIOException  if the file cannot be written; {@code file} is then unchanged
     */
    public static void write(Path file, OptimizerState state) {
        Map<String, Object> dict = TorchStateWriter.toDict(state);
        AtomicFile.write(file, TorchStateFormat.WHAT, channel -> TorchSave.write(dict, Channels.newOutputStream(channel)),
                AtomicFile.NEW_FILE);
    }

    /**
     * Reads a file for an optimizer whose own state is {@code template}: the file's parameter ids are mapped to the
     * template's parameters by position within the groups, every tensor is checked against its parameter's shape
     * and dtype, and the settings the file does not hold come from the template's configs.
     *
     * @param file     the file
     * @param template the optimizer's own state (its tensors are not used)
     * @return the file's state: the template's entries with the file's buffers (no values), the file's
     *         hyperparameters, its step count, and no schedule record; tensors are new CPU tensors of the caller's
     *         {@code PointerScope}
     * @throws StateFileException if the file is missing, not a {@code torch.save} file, asks to run anything, or
     *                            does not fit the template, naming the entry and the rule
     */
    public static OptimizerState read(Path file, OptimizerState template) {
        return StateFileRead.read(file, TorchStateFormat.WHAT, () -> {
            try (TorchLoad load = TorchLoad.open(file)) {
                return new TorchStateReader(file, template, load).read(load.root());
            }
        });
    }
}
