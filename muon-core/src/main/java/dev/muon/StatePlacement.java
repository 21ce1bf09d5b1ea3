package dev.muon;


import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;

/**
 * Puts each Muon group's state where its {@link StateStorage} says, when the optimizer is built: checks that every
 * parameter of the group can keep its state there (refused naming the setting, the parameter and the rule), opens
 * the homes (a file per process and group, host buffers per device) for the buffers this process keeps (its own
 * parameters' under a shard plan, every one in a single process), and records each parameter's home
 * ({@link StateHomes}). Every check comes before the first home is opened, the free space for every file together
 * ({@link FileHome#requireRoom}), and a home that fails to open closes those opened before it: a refused build leaves
 * no file behind.
 */
final class StatePlacement {
    /** The seams of the tests: a CPU standing in for the device of {@link StateStorage.Place#HOST_MEMORY}, a disk. */
    record Seams(DeviceTransfers cpuAsAccelerator, FileHome.Disk disk) {
        static final Seams NONE = new Seams(null, FileHome.REAL);
    }

    private StatePlacement() {
    }

    /**
     * Places every group's state.
     *
     * @param groups      the groups, in order
     * @param storages    each group's storage
     * @param keeps       whether this process keeps the owned buffers of the parameter at a position
     * @param rank        this process's rank, for the file's name
     * @param seams       the tests' seams, or {@link Seams#NONE}
     * @return each parameter's home ({@link StateHomes#NONE} when every group keeps its state with its parameters)
     * @throws IllegalArgumentException naming the setting, the parameter or directory, and the rule
     */
    static StateHomes place(List<MuonGroup> groups, List<StateStorage> storages, IntPredicate keeps, int rank,
                                 Seams seams) {
        int position = 0;
        Map<ParameterState, Integer> positions = new java.util.HashMap<>();
        List<Map<String, Map<ParameterState, List<BufferSpec>>>> plans = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            StateStorage storage = storages.get(g);
            // Per device (host memory) or one (files): the buffers each parameter keeps.
            Map<String, Map<ParameterState, List<BufferSpec>>> byDevice = new LinkedHashMap<>();
            for (ParameterState state : groups.get(g).params) {
                int index = position++;
                positions.put(state, index);
                if (storage.place() == StateStorage.Place.WITH_PARAMETER) {
                    continue;
                }
                requireFits(storage, state, g, seams);
                List<BufferSpec> kept = new ArrayList<>();
                for (BufferSpec spec : state.declared) {
                    if (keeps.test(index) || !spec.owned()) {
                        kept.add(spec);
                    }
                }
                String device = storage.place() == StateStorage.Place.FILES ? "files"
                        : state.param.device().str().getString();
                byDevice.computeIfAbsent(device, d -> new LinkedHashMap<>()).put(state, kept);
            }
            plans.add(byDevice);
        }
        // The free space once, for every file together: the groups' files in one directory (or on one file store)
        // share its room, and a file reaches its full length only as its slots are first written, steps later.
        List<FileHome.Planned> files = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            if (storages.get(g).place() == StateStorage.Place.FILES) {
                for (Map<ParameterState, List<BufferSpec>> kept : plans.get(g).values()) {
                    files.add(new FileHome.Planned(g, storages.get(g), FileHome.bytesNeeded(kept)));
                }
            }
        }
        FileHome.requireRoom(files, seams.disk());
        List<StateHome> homes = new ArrayList<>();
        StateHome[] byPosition = new StateHome[position];
        try {
            for (int g = 0; g < groups.size(); g++) {
                StateStorage storage = storages.get(g);
                for (Map<ParameterState, List<BufferSpec>> kept : plans.get(g).values()) {
                    StateHome home = open(storage, kept, rank, seams);
                    homes.add(home);
                    kept.keySet().forEach(state -> byPosition[positions.get(state)] = home);
                }
            }
        } catch (RuntimeException | Error e) {
            homes.forEach(StateHome::close);
            throw e;
        }
        return homes.isEmpty() ? StateHomes.NONE : new StateHomes(byPosition, homes);
    }

    private static StateHome open(StateStorage storage, Map<ParameterState, List<BufferSpec>> kept, int rank,
                                  Seams seams) {
        return switch (storage.place()) {
            case WITH_PARAMETER -> throw new IllegalStateException("no home for " + storage);
            case FILES -> FileHome.open(storage, kept, rank, seams.disk());
            case HOST_MEMORY -> {
                ParameterState first = kept.keySet().iterator().next();
                boolean cpu = first.param.device().is_cpu();
                DeviceTransfers transfers = cpu ? seams.cpuAsAccelerator()
                        : DeviceTransfers.of(first.param.device(), storage.readAhead());
                yield HostMemoryHome.open(storage, kept, transfers, !cpu);
            }
        };
    }

    /** Refuses a parameter whose device the storage does not serve. */
    private static void requireFits(StateStorage storage, ParameterState state, int group, Seams seams) {
        boolean cpu = state.param.device().is_cpu();
        String device = state.param.device().str().getString();
        if (storage.place() == StateStorage.Place.HOST_MEMORY && cpu && seams.cpuAsAccelerator() == null) {
            throw new IllegalArgumentException(storage.setting() + " keeps the state of accelerator parameters in "
                    + "host memory; " + state.label + " (group " + group + ") is on " + device + ", where its state "
                    + "is in host memory already: use StateStorage.withParameter(), or StateStorage.files(directory) "
                    + "to keep it out of memory");
        }
        if (storage.place() == StateStorage.Place.FILES && !cpu) {
            throw new IllegalArgumentException(storage.setting() + " keeps the state of CPU parameters in files; "
                    + state.label + " (group " + group + ") is on " + device + ": use StateStorage.hostMemory() for "
                    + "accelerator parameters");
        }
    }
}
