package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import dev.muon.AdamWConfig;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.UpdateRecipe;
import dev.muon.state.CheckpointBytes;
import dev.muon.state.CheckpointDocument;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * How {@link Muon} and {@link MuonAdamW} save their state to a checkpoint ({@link DjlCheckpoint}) and load it
 * back, written once: the state comes from and goes to the step driver (values and counts), the Muon step (its
 * config and buffers) and, for MuonAdamW, the AdamW step (moments); the optimizer passes its named parameters and
 * its AdamW config, and takes the loaded document's AdamW hyperparameters itself. As {@link ModelBinding} does for
 * the binding, it serves both optimizers and holds neither.
 */
final class StateTransfer {
    private final ModelBinding binding;
    private final StepDriver driver;
    private final MuonStep muon;
    /** MuonAdamW's AdamW step; null for Muon, whose parameters are all on Muon. */
    private final AdamWStep adamW;

    StateTransfer(ModelBinding binding, StepDriver driver, MuonStep muon, AdamWStep adamW) {
        this.binding = binding;
        this.driver = driver;
        this.muon = muon;
        this.adamW = adamW;
    }

    /**
     * Writes the checkpoint: the step count, the configs (the Muon step's, and {@code adamWConfig}), and per named
     * parameter its value and state.
     *
     * @param named       the optimizer's named parameters in the checkpoint's order, asked once the binding is ready
     * @param adamWConfig the AdamW group's config, null for Muon
     * @throws IllegalStateException if the optimizer is bound to no block, or its parameters do not exist yet
     */
    void save(Path path, Supplier<List<DjlCheckpoint.Named>> named, AdamWConfig adamWConfig) {
        Objects.requireNonNull(path, "path must not be null");
        binding.requireReady();
        List<DjlCheckpoint.Named> parameters = named.get();
        Map<String, DjlCheckpoint.Held> held = held(parameters);
        DjlCheckpoint.write(path, DjlCheckpoint.document(driver.stepCount(), muon.config(), adamWConfig, parameters,
                held), parameters, held);
    }

    /**
     * Reads a checkpoint, checks everything, then takes the values, the buffers, the moments, the counts and the
     * Muon hyperparameters (into the Muon step); the AdamW config is the caller's to take from the returned document.
     *
     * @param named          as for {@link #save}
     * @param adamWConfig    the AdamW group's config, null for Muon
     * @param beginNumUpdate the builder's begin count, which the checkpoint's step must match when set
     * @return the checkpoint's document
     * @throws IllegalStateException if the optimizer is bound to no block or its parameters do not exist yet; a
     *                               failed load changes nothing
     */
    CheckpointDocument load(Path path, Supplier<List<DjlCheckpoint.Named>> named, AdamWConfig adamWConfig,
                            int beginNumUpdate) {
        Objects.requireNonNull(path, "path must not be null");
        binding.requireReady();
        List<DjlCheckpoint.Named> parameters = named.get();
        MuonConfig muonConfig = muon.config();
        CheckpointDocument mine = DjlCheckpoint.document(driver.stepCount(), muonConfig, adamWConfig, parameters,
                Map.of());
        CheckpointBytes.Contents read = DjlCheckpoint.read(path, mine, beginNumUpdate);
        DjlCheckpoint.Loaded loaded = DjlCheckpoint.arrays(read, parameters, UpdateRecipe.of(muonConfig).buffers());
        // Nothing has changed so far; from here on nothing can fail.
        loaded.putValues(driver.copies());
        muon.restore(loaded.buffers);
        if (adamW != null) {
            Map<String, NDList> moments = new HashMap<>();
            loaded.moments.forEach((id, m) -> moments.put(id, new NDList(m[0], m[1])));
            adamW.restore(moments);
        }
        driver.restore(read.document().step(), loaded.adamWSteps);
        muon.hyperparameters(read.document().muonConfigs().get(0).hyperparameters());
        return read.document();
    }

    /** Each parameter's state: its copy on the parameter's own device, or any copy's. */
    private Map<String, DjlCheckpoint.Held> held(List<DjlCheckpoint.Named> named) {
        Map<String, DjlCheckpoint.Held> out = new LinkedHashMap<>();
        for (DjlCheckpoint.Named n : named) {
            if (n.aliasOf() != null) {
                continue;
            }
            ParameterKey key = stateKey(n.entry());
            if (n.kind() == OptimizerKind.MUON) {
                Map<String, NDArray> buffers = muon.buffers(key);
                if (!buffers.isEmpty()) {
                    out.put(n.name(), new DjlCheckpoint.Held(buffers, null, null, 0));
                }
            } else {
                adamW.moments(key).ifPresent(m -> out.put(n.name(), new DjlCheckpoint.Held(Map.of(), m.get(0),
                        m.get(1), driver.updatesOf(key))));
            }
        }
        return out;
    }

    /** The key of a parameter's state: its copy on the parameter's own device, or another device's. */
    private ParameterKey stateKey(ModelParameters.Entry e) {
        ParameterKey own = new ParameterKey(e.id(), e.parameter().getArray().getDevice());
        if (driver.copies().containsKey(own)) {
            return own;
        }
        return driver.copies().keySet().stream().filter(k -> k.parameterId().equals(e.id())).findFirst()
                .orElse(own);
    }
}
