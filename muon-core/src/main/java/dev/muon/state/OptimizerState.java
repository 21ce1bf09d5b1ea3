package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.BufferSpec;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.UpdateRecipe;
import dev.muon.internal.NullFreeList;
import dev.muon.internal.TorchNatives;
import dev.muon.schedule.ScheduleRecord;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything an optimizer restores from, as one immutable value: the step count, each Muon group's configuration,
 * the AdamW configuration (null for a {@link dev.muon.Muon} alone), one {@link ParameterEntry} per named
 * parameter in the optimizer's order, and the schedule record (null when it has none).
 *
 * <p>{@link dev.muon.Muon} and {@link dev.muon.MuonAdamW} produce one ({@code state()}) and restore from one
 * ({@code restore(OptimizerState)}); the two file formats turn one into bytes and back: {@link CheckpointFile}
 * (muon-core's checkpoints) and {@link TorchStateFile} (PyTorch's {@code optimizer.state_dict()} file). Restoring
 * checks that the state fits the optimizer first and lists every difference ({@link StateMismatchException});
 * see {@code docs/checkpoints.md}.
 *
 * <p>The tensors are libtorch tensors: those of a state read from a file are new CPU tensors filled from checked
 * bytes; those of an optimizer's {@code state()} are copies the caller owns.
 *
 * @param step        the optimizer's step count
 * @param muonConfigs each Muon group's configuration, at least one
 * @param adamWConfig the AdamW group's configuration, null when the optimizer has no AdamW part
 * @param entries     every named parameter, in the optimizer's order
 * @param schedule    the schedule record, or null
 */
public record OptimizerState(long step, List<MuonConfig> muonConfigs, AdamWConfig adamWConfig,
                             List<ParameterEntry> entries, ScheduleRecord schedule) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException if the step is negative, there is no Muon config, two entries share a name,
     *                                  a Muon entry's group has no config, an AdamW entry exists without an AdamW
     *                                  config, or a tied name refers to no entry
     * @throws NullPointerException     if a list or element is null
     */
    public OptimizerState {
        if (step < 0) {
            throw new IllegalArgumentException("step must be >= 0, got " + step);
        }
        muonConfigs = NullFreeList.copyOf(muonConfigs, "muonConfigs");
        entries = NullFreeList.copyOf(entries, "entries");
        CheckpointDocument.checkPlaces(muonConfigs, adamWConfig, entries.stream().map(ParameterEntry::spec)
                .map(p -> new CheckpointDocument.Place(p.name(), p.optimizer(), p.group(), p.tiedTo())).toList(),
                name -> name);
    }

    /**
     * The entry of a name.
     *
     * @param name the parameter's name
     * @return the entry, if there is one
     */
    public Optional<ParameterEntry> entry(String name) {
        Objects.requireNonNull(name, "name must not be null");
        return entries.stream().filter(e -> e.name().equals(name)).findFirst();
    }

    /**
     * The specs of every entry, in order: what the state describes, without its values.
     *
     * @return the specs
     */
    public List<ParameterSpec> specs() {
        return entries.stream().map(ParameterEntry::spec).toList();
    }

    /**
     * The Muon state buffers a parameter's update keeps: those its Muon group's recipe declares
     * ({@link dev.muon.UpdateRecipe#buffers()}), none for an AdamW parameter or a tied name.
     *
     * @param spec the parameter
     * @return the declarations, in the recipe's order
     */
    public List<BufferSpec> declaredBuffers(ParameterSpec spec) {
        if (spec.optimizer() != OptimizerKind.MUON || spec.group() >= muonConfigs.size()) {
            return List.of();
        }
        return UpdateRecipe.of(muonConfigs.get(spec.group())).buffers();
    }

    /**
     * This state's document, as muon-core's checkpoint holds it: every entry's spec with its dtype as libtorch names
     * it ({@code Float}) and its AdamW step, without the tensors ({@link #tensors()}).
     *
     * @return the document
     */
    public CheckpointDocument document() {
        List<CheckpointDocument.Parameter> parameters = new java.util.ArrayList<>();
        for (ParameterEntry e : entries) {
            ParameterSpec s = e.spec();
            parameters.add(new CheckpointDocument.Parameter(s.name(), s.optimizer(), s.group(), s.shape(),
                    s.dtype().name(), s.tiedTo(), s.rowSplit(), e.adamW() == null ? null : e.adamW().step()));
        }
        return new CheckpointDocument(step, muonConfigs, adamWConfig, schedule, parameters);
    }

    /**
     * This state's tensors as the checkpoint names them, {@code <kind>/<name>}: {@code value}, each Muon buffer's
     * key, {@code exp_avg} and {@code exp_avg_sq}, in entry order.
     *
     * @return the tensors (the entries' own handles)
     */
    public java.util.Map<String, org.bytedeco.pytorch.Tensor> tensors() {
        java.util.Map<String, org.bytedeco.pytorch.Tensor> out = new java.util.LinkedHashMap<>();
        for (ParameterEntry e : entries) {
            if (e.value() != null) {
                out.put(TensorNames.value(e.name()), e.value());
            }
            e.buffers().forEach((key, buffer) -> out.put(TensorNames.of(key, e.name()), buffer));
            if (e.adamW() != null) {
                out.put(TensorNames.expAvg(e.name()), e.adamW().expAvg());
                out.put(TensorNames.expAvgSq(e.name()), e.adamW().expAvgSq());
            }
        }
        return out;
    }

    /**
     * The number of groups a schedule record covers: the Muon groups, and AdamW's when there is one.
     *
     * @return the group count
     */
    public int groupCount() {
        return muonConfigs.size() + (adamWConfig == null ? 0 : 1);
    }
}
