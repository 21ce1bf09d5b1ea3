package dev.muon;

import dev.muon.internal.TorchNatives;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Where a Muon group's per-parameter state (every buffer its update declares: the momentum, NorMuon's second moment,
 * a future variant's) lives between the parameter's updates. An immutable value, set on the builder
 * ({@link Muon.Builder#stateStorage(StateStorage)}, {@link MuonAdamW.Builder#muonStateStorage(StateStorage)}), never
 * in a {@link MuonConfig}: it is a property of this process and its machine, not of the update, so checkpoints do not
 * carry it and load into an optimizer of any storage.
 *
 * <table>
 *   <caption>Places</caption>
 *   <tr><th>place</th><th>for</th><th>what a step does</th></tr>
 *   <tr><td>{@link Place#WITH_PARAMETER} (default)</td><td>any parameter</td>
 *       <td>the buffers live on the parameter's device, as they always did</td></tr>
 *   <tr><td>{@link Place#HOST_MEMORY}</td><td>accelerator parameters</td>
 *       <td>the buffers live in pinned host memory; each parameter's are copied to the device for its update and
 *       back after it, the next parameter's copy running on a stream of its own while this one's Newton–Schulz
 *       runs</td></tr>
 *   <tr><td>{@link Place#FILES}</td><td>CPU parameters</td>
 *       <td>the buffers live in one file per process under {@link #directory()}; each parameter's are read before
 *       its update (the next one's read ahead on a thread of its own) and written back after it</td></tr>
 * </table>
 *
 * <p>The update itself does not change: it runs on the parameter's device with the same kernels on buffers of the
 * same values, so parameters and state end bit for bit as with {@link Place#WITH_PARAMETER}.
 *
 * <pre>{@code
 * Muon muon = Muon.builder().addGroup(params, config)
 *         .stateStorage(StateStorage.files(Path.of("/scratch/muon")))
 *         .build();
 * }</pre>
 *
 * @param place     where the buffers live
 * @param directory the directory of the state files, for {@link Place#FILES} only (null otherwise)
 * @param readAhead whether the next parameter's buffers are brought in while this one is updated (default on); off,
 *                  each parameter waits for its own
 */
public record StateStorage(Place place, Path directory, boolean readAhead) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** Where a Muon group's state buffers live between updates. */
    public enum Place {
        /** On the parameter's device, with the parameter: the default. */
        WITH_PARAMETER,
        /** In pinned host memory, for parameters on an accelerator. */
        HOST_MEMORY,
        /** In files under a directory, for CPU parameters. */
        FILES;

        static {
            TorchNatives.extract();
        }
    }

    /**
     * Validates.
     *
     * @throws NullPointerException     if {@code place} is null, or {@code directory} for {@link Place#FILES}
     * @throws IllegalArgumentException if a directory is given for another place, or read-ahead is turned off for
     *                                  {@link Place#WITH_PARAMETER}, which brings nothing in
     */
    public StateStorage {
        Objects.requireNonNull(place, "stateStorage place must not be null");
        if (place == Place.FILES) {
            Objects.requireNonNull(directory, "stateStorage FILES needs a directory, got null");
        } else if (directory != null) {
            throw new IllegalArgumentException("stateStorage directory is for FILES only; " + place
                    + " got directory " + directory);
        }
        if (place == Place.WITH_PARAMETER && !readAhead) {
            throw new IllegalArgumentException("stateStorage readAhead is for HOST_MEMORY and FILES only "
                    + "(WITH_PARAMETER brings no buffer in); WITH_PARAMETER got readAhead false");
        }
    }

    /**
     * The default: each buffer on its parameter's device.
     *
     * @return the storage
     */
    public static StateStorage withParameter() {
        return new StateStorage(Place.WITH_PARAMETER, null, true);
    }

    /**
     * The buffers of accelerator parameters in pinned host memory, with read-ahead.
     *
     * @return the storage
     */
    public static StateStorage hostMemory() {
        return new StateStorage(Place.HOST_MEMORY, null, true);
    }

    /**
     * The buffers of CPU parameters in files under {@code directory}, with read-ahead. The directory must exist
     * and be writable, with room for every state file the optimizer will write there (checked at build, together
     * with its other files on the same file store); each process makes one file of its own per group there
     * ({@code muon-state-<run>-rank<r>.bin}), removes it on {@code close()} (an optimizer dropped without it, once it
     * is collected), and never reads or removes another's.
     *
     * @param directory an existing, writable directory
     * @return the storage
     * @throws NullPointerException if {@code directory} is null
     */
    public static StateStorage files(Path directory) {
        return new StateStorage(Place.FILES, directory, true);
    }

    /**
     * A copy with read-ahead on or off, for {@link Place#HOST_MEMORY} and {@link Place#FILES}.
     *
     * @param value whether the next parameter's buffers are brought in during this one's update
     * @return the copy
     * @throws IllegalArgumentException if {@code value} is false for {@link Place#WITH_PARAMETER}, which brings
     *                                  nothing in
     */
    public StateStorage withReadAhead(boolean value) {
        return new StateStorage(place, directory, value);
    }

    /**
     * How messages name it, e.g. {@code stateStorage FILES}.
     *
     * @return the setting and its place
     */
    String setting() {
        return "stateStorage " + place;
    }
}
