package dev.muon;

import dev.muon.CombinationCase.Feature;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.ShardingConfig;
import dev.muon.schedule.TrainingOptimizer;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

/**
 * One rank of the state-storage equality test ({@code dev.muon.distributed.StateStorageEqualityTest}): every cell of
 * the combination table ({@link CombinationCase}) sharded over the group, run three times with the same gradients,
 * its Muon state with the parameters, in files and in host memory (a CPU standing in for the accelerator), and
 * compared bit for bit: this rank's parameters and what {@code state()} gives this rank (on rank 0 every owner's
 * buffers, gathered). Then each offloaded run loads the checkpoint the first run saved after step 2 (written with
 * the state beside the parameters, loaded into state kept elsewhere, on every rank) and runs step 3 again, and is
 * compared once more. Each line of the report names the cell, the storage and {@code same} or what differs; it also
 * checks that the files storage made this rank's file, kept in it exactly the buffers of the parameters this rank
 * owns, and removed it on {@code close()}. All cells run in this one process: a JVM and libtorch start once.
 */
public final class StateStorageEqualityWorker {
    private StateStorageEqualityWorker() {
    }

    /** The storages compared with the default, by their names in the report. */
    static Map<String, StateStorage> storages(Path stateDir) {
        Map<String, StateStorage> storages = new LinkedHashMap<>();
        storages.put("files", StateStorage.files(stateDir));
        storages.put("host-memory", StateStorage.hostMemory());
        return storages;
    }

    /** The report of a rank: {@code storage-world<W>-rank<r>.txt}. */
    public static Path report(Path dir, int world, int rank) {
        return dir.resolve("storage-world" + world + "-rank" + rank + ".txt");
    }

    /**
     * Runs every cell with every storage and writes this rank's report.
     *
     * @param group the group, of any size
     * @param dir   where the report and the state files go
     * @throws IOException if the report cannot be written
     */
    public static void run(DistributedGroup group, Path dir) throws IOException {
        Path stateDir = Files.createDirectories(dir.resolve("state-rank" + group.rank()));
        ShardingConfig sharding = ShardingConfig.defaults().withAverageGradients(false);
        List<String> report = new ArrayList<>();
        for (Feature[] pair : CombinationCase.pairs()) {
            CombinationCase cell = CombinationCase.of(pair[0], pair[1]);
            try (PointerScope scope = new PointerScope()) {
                Path checkpoint = dir.resolve("step2.ckpt");
                Outcome base = runCell(cell, group, sharding, StateStorage.withParameter(), stateDir, checkpoint);
                for (Map.Entry<String, StateStorage> storage : storages(stateDir).entrySet()) {
                    Outcome other = runCell(cell, group, sharding, storage.getValue(), stateDir, checkpoint);
                    String differs = base.differsFrom(other);
                    if (differs == null) {
                        differs = base.reloaded.differsFrom(other.reloaded);
                        differs = differs == null ? null : "after the load of step 2's checkpoint: " + differs;
                    }
                    report.add(cell + ", " + storage.getKey() + ": " + (differs == null ? "same" : differs)
                            + (other.problem == null ? "" : "; " + other.problem));
                }
            }
        }
        Files.write(report(dir, group.worldSize(), group.rank()), report);
    }

    /**
     * What a run of a cell leaves on this rank, what it leaves after loading step 2's checkpoint and running step 3
     * again, and anything wrong with how its storage kept the state.
     */
    private record Outcome(List<Tensor> params, OptimizerState state, Outcome reloaded, String problem) {
        /** What differs between two runs, or null. */
        String differsFrom(Outcome other) {
            for (int i = 0; i < params.size(); i++) {
                if (!params.get(i).equal(other.params.get(i))) {
                    return "parameter " + i + " differs";
                }
            }
            if (state.step() != other.state.step()) {
                return "step " + state.step() + " against " + other.state.step();
            }
            for (int i = 0; i < state.entries().size(); i++) {
                ParameterEntry a = state.entries().get(i);
                ParameterEntry b = other.state.entries().get(i);
                if (!a.buffers().keySet().equals(b.buffers().keySet())) {
                    return a.name() + " has buffers " + a.buffers().keySet() + " against " + b.buffers().keySet();
                }
                for (String key : a.buffers().keySet()) {
                    if (!a.buffer(key).equal(b.buffer(key))) {
                        return a.name() + " " + key + " differs";
                    }
                }
                if ((a.value() == null) != (b.value() == null) || a.value() != null && !a.value().equal(b.value())) {
                    return a.name() + " value differs in the state";
                }
            }
            return null;
        }
    }

    /**
     * Runs a cell: three steps; the first run (state beside the parameters) saves a checkpoint after step 2. Then
     * step 2's checkpoint is loaded and step 3 runs again.
     */
    private static Outcome runCell(CombinationCase cell, DistributedGroup group, ShardingConfig sharding,
                                   StateStorage storage, Path stateDir, Path checkpoint) throws IOException {
        Random random = new Random(31);
        Map<String, Tensor> named = cell.parameters(cell.initialValues(random));
        QkClip clip = cell.clip(named);
        TrainingOptimizer optimizer = cell.build(named, clip, group, sharding, storage,
                storage.place() == StateStorage.Place.HOST_MEMORY ? DeviceTransfers.synchronous() : null);
        boolean first = storage.place() == StateStorage.Place.WITH_PARAMETER;
        for (int step = 1; step <= CombinationCase.STEPS; step++) {
            cell.gradients(random, step, named);
            cell.report(clip);
            optimizer.step();
            if (first && step == 2) {
                save(optimizer, checkpoint);
            }
        }
        String problem = null;
        if (storage.place() == StateStorage.Place.FILES) {
            problem = checkFiles(optimizer, cell, group, stateDir);
        }
        OptimizerState state = state(optimizer);
        List<Tensor> params = new ArrayList<>();
        named.values().forEach(p -> params.add(p.detach().clone()));
        // Step 3 again from step 2's checkpoint: its gradients are still on the parameters.
        load(optimizer, checkpoint);
        cell.report(clip);
        optimizer.step();
        List<Tensor> again = new ArrayList<>();
        named.values().forEach(p -> again.add(p.detach().clone()));
        Outcome reloaded = new Outcome(again, state(optimizer), null, null);
        if (optimizer instanceof Muon muon) {
            muon.close();
        } else {
            ((MuonAdamW) optimizer).close();
        }
        if (storage.place() == StateStorage.Place.FILES && problem == null && !files(stateDir).isEmpty()) {
            problem = "close() left " + files(stateDir);
        }
        return new Outcome(params, state, reloaded, problem);
    }

    private static OptimizerState state(TrainingOptimizer optimizer) {
        return optimizer instanceof Muon muon ? muon.state() : ((MuonAdamW) optimizer).state();
    }

    private static void save(TrainingOptimizer optimizer, Path checkpoint) {
        if (optimizer instanceof Muon muon) {
            muon.save(checkpoint);
        } else {
            ((MuonAdamW) optimizer).save(checkpoint);
        }
    }

    private static void load(TrainingOptimizer optimizer, Path checkpoint) {
        if (optimizer instanceof Muon muon) {
            muon.load(checkpoint);
        } else {
            ((MuonAdamW) optimizer).load(checkpoint);
        }
    }

    /**
     * What is wrong with this rank's state file, or null: there must be one, and, for a Muon, it must keep the
     * declared buffers of exactly the parameters this rank owns.
     */
    private static String checkFiles(TrainingOptimizer optimizer, CombinationCase cell, DistributedGroup group,
                                     Path stateDir) throws IOException {
        List<Path> files = files(stateDir);
        if (files.size() != 1 || !files.get(0).getFileName().toString().endsWith("-rank" + group.rank() + ".bin")) {
            return "the state files of this rank are " + files;
        }
        if (optimizer instanceof Muon muon) {
            int owned = muon.shardPlan().orElseThrow().ownedBy(group.rank()).size();
            int expected = owned * UpdateRecipe.of(cell.config).buffers().size();
            int entries = ((FileHome) muon.stateHomes().get(0)).entryCount();
            if (entries != expected) {
                return "the file keeps " + entries + " buffers; this rank owns " + owned + " parameters of "
                        + UpdateRecipe.of(cell.config).buffers().size() + " declared buffers each";
            }
        }
        return null;
    }

    private static List<Path> files(Path stateDir) throws IOException {
        try (Stream<Path> list = Files.list(stateDir)) {
            return list.toList();
        }
    }
}
