package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.state.StateFileException;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The buffers of CPU parameters in one file of this process ({@link StateStorage.Place#FILES}): read per parameter
 * before its update (the next one's read ahead on a thread of its own) and written back after it.
 *
 * <p><b>Layout.</b> {@code <directory>/muon-state-<run>-rank<r>.bin}: a header, then every buffer this process keeps
 * as two slots, each a slot header and the buffer's bytes; {@link StateFileFormat} holds the bytes and their checks.
 *
 * <p><b>Writes go to the slot not in force</b>, and the slot is put in force only after the whole buffer is
 * written: a write that fails (a full disk) leaves the previous state in the other slot, readable and intact.
 * Slots are written in place, so after each buffer's first two stores the file never grows.
 *
 * <p><b>Checks.</b> This process remembers, per buffer, the slot in force, its generation and the CRC-32C of what it
 * wrote. Before a step changes anything ({@link #checkBeforeStep}) the file's length and every slot header in force
 * are checked against that (truncated, another run's, an older generation); when a buffer is read, its bytes are
 * checked against the CRC. Nothing is ever read from a file this process did not make in this run.
 *
 * <p>No mapping: explicit reads and writes keep the resident memory of the state to the buffers in flight (mapped
 * pages would count against the process and a full disk would arrive as SIGBUS), and let every byte be checked.
 */
final class FileHome implements StateHome {
    /** The format's alignment; for tests, which find slots by it. */
    static final int ALIGN = StateFileFormat.ALIGN;
    /** The largest buffer handed to one read or write: a Java buffer holds at most 2^31 − 1 bytes. */
    private static final int CHUNK = 1 << 30;

    /** The file operations the home uses; tests inject faults (a full disk, a read-only directory) here. */
    interface Disk {
        /**
         * The bytes free for this process in a directory.
         *
         * @param directory the directory
         * @return bytes
         * @throws IOException if it cannot be asked
         */
        long usableSpace(Path directory) throws IOException;

        /**
         * Creates a new file, for reading and writing.
         *
         * @param file the file, which must not exist
         * @return its channel
         * @throws IOException if it cannot be created
         */
        Channel create(Path file) throws IOException;

        /**
         * The file store a directory is on: directories of one store share its free space, so the optimizer's
         * files there must fit in it together.
         *
         * @param directory the directory
         * @return a value equal for directories of the same store ({@link Files#getFileStore} by default)
         * @throws IOException if it cannot be asked
         */
        default Object store(Path directory) throws IOException {
            return Files.getFileStore(directory);
        }
    }

    /** Positional reads and writes of one file, as {@link Disk#create} opens it for the format. */
    interface Channel extends StateFileFormat.Channel {
    }

    /** The real file system. */
    static final Disk REAL = new Disk() {
        @Override
        public long usableSpace(Path directory) throws IOException {
            return Files.getFileStore(directory).getUsableSpace();
        }

        @Override
        public Channel create(Path file) throws IOException {
            FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
            return new Channel() {
                @Override
                public int read(ByteBuffer dst, long position) throws IOException {
                    return channel.read(dst, position);
                }

                @Override
                public int write(ByteBuffer src, long position) throws IOException {
                    return channel.write(src, position);
                }

                @Override
                public long size() throws IOException {
                    return channel.size();
                }

                @Override
                public void close() throws IOException {
                    channel.close();
                }
            };
        }
    };

    /** One buffer this process keeps: where its two slots are, which is in force, and what was written there. */
    private static final class Entry {
        final KeptBuffers.Buffer buffer;
        /** Where its two slots lie in the file. */
        final StateFileFormat.Slots slots;
        /** The slot in force, or -1: nothing stored. */
        int current = -1;
        long generation;
        int crc;
        /** A read in flight ahead of the update, and the tensor it fills. */
        Future<?> pending;
        Tensor prefetched;

        Entry(KeptBuffers.Buffer buffer, StateFileFormat.Layout layout) {
            this.buffer = buffer;
            this.slots = layout.add(buffer.bytes(), buffer.dtype().value);
        }

        String what() {
            return "the " + buffer.spec().label() + " of " + buffer.state().label;
        }
    }

    /** A restore's write of a buffer, in force once committed: the slot it went to, its generation and CRC. */
    private record SlotWrite(int slot, long generation, int crc) {
    }

    private final StateStorage storage;
    private final Path file;
    /** The file's bytes: where the slots lie, their headers and checks. */
    private final StateFileFormat format;
    private final Disk disk;
    private final KeptBuffers<Entry> entries;
    private final StagedWrites<Entry, SlotWrite> staged;
    /** The tensors of the buffers in flight: this unit's and the next one's. */
    private final WorkingBuffers working = new WorkingBuffers(new org.bytedeco.pytorch.Device(torch.DeviceType.CPU));
    private final ExecutorService io;
    /** What removes the file, shared by {@link #close}, the shutdown hook and the optimizer's cleaner. */
    private final Release release;
    private boolean closed;

    private FileHome(StateStorage storage, Path file, Channel channel, StateFileFormat format, Disk disk,
                     KeptBuffers<Entry> entries) {
        this.storage = storage;
        this.file = file;
        this.format = format;
        this.disk = disk;
        this.entries = entries;
        this.staged = new StagedWrites<>(entries);
        entries.states().forEach(state -> state.lendFrom(spec -> {
            Entry entry = entries.find(state, spec);
            return entry != null ? take(entry) : null;
        }));
        // Every read and write runs on this thread, even without read-ahead: a file channel is closed for good when
        // the thread inside one of its calls is interrupted, and the training thread may be.
        this.io = Executors.newSingleThreadExecutor(task -> {
            Thread t = new Thread(task, "muon-state-io");
            t.setDaemon(true);
            return t;
        });
        // A process that ends without close() still removes its file; a crash leaves it (docs/api.md says how to
        // clean up).
        Thread hook = new Thread(() -> deleteQuietly(file), "muon-state-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        this.release = new Release(file, channel, io, hook);
    }

    /**
     * Lets go of a state file: stops its I/O thread, closes it, removes it and its shutdown hook; a second run does
     * nothing. It holds only what it lets go of, never the home or the optimizer, so that the optimizer's cleaner
     * ({@link Muon}) can run it once the optimizer is unreachable. It removes only this home's own file, whose name
     * holds a run identity drawn for it: never another run's.
     */
    static final class Release implements Runnable {
        private final Path file;
        private final Channel channel;
        private final ExecutorService io;
        private final Thread hook;
        private final AtomicBoolean done = new AtomicBoolean();

        Release(Path file, Channel channel, ExecutorService io, Thread hook) {
            this.file = file;
            this.channel = channel;
            this.io = io;
            this.hook = hook;
        }

        @Override
        public void run() {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            io.shutdown();
            closeQuietly(channel);
            deleteQuietly(file);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // the JVM is shutting down; the hook deletes nothing that is left
            }
        }
    }

    /**
     * What removes this home's file, for the optimizer's cleaner: it references neither the home nor the optimizer.
     *
     * @return the release, which {@link #close} runs too; it runs once
     */
    Runnable release() {
        return release;
    }

    /** One state file an optimizer will write at build: the group it serves, its storage and its full length. */
    record Planned(int group, StateStorage storage, long bytes) {
    }

    /**
     * Checks the directory of a storage: it exists and is a directory.
     *
     * @param storage a storage of {@link StateStorage.Place#FILES}
     * @return the directory, absolute
     * @throws IllegalArgumentException naming the directory and the rule
     */
    static Path directoryOf(StateStorage storage) {
        Path directory = storage.directory().toAbsolutePath();
        String setting = storage.setting() + " directory " + directory;
        if (!Files.exists(directory)) {
            throw new IllegalArgumentException(setting + " must be an existing directory; it does not exist");
        }
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException(setting + " must be a directory; it is a file");
        }
        return directory;
    }

    /**
     * The bytes a state file of these buffers takes once every slot has been written: the header and two slots of
     * every buffer.
     *
     * @param kept per parameter, the declared buffers this process keeps, in order
     * @return bytes
     */
    static long bytesNeeded(Map<ParameterState, List<BufferSpec>> kept) {
        StateFileFormat.Layout layout = new StateFileFormat.Layout();
        layOut(kept, layout);
        return layout.length();
    }

    /**
     * Checks, before any of them is created, that every state file an optimizer will write fits: the files on one
     * file store ({@link Disk#store}) together, whether in one directory or several, against that store's free
     * space. A file grows to its full length only as its slots are first written, so without this a build with room
     * for one group's file would fail part-way at a later step with a full disk.
     *
     * @param files the files, in group order
     * @param disk  the file operations
     * @throws IllegalArgumentException naming the directory, the bytes needed (per file, when a store holds more
     *                                  than one) and the bytes free
     */
    static void requireRoom(List<Planned> files, Disk disk) {
        Map<Object, List<Planned>> byStore = new LinkedHashMap<>();
        for (Planned planned : files) {
            Path directory = directoryOf(planned.storage());
            Object store;
            try {
                store = disk.store(directory);
            } catch (IOException e) {
                throw new IllegalArgumentException(planned.storage().setting() + " directory " + directory
                        + " must report its file store; asking failed (" + e + ")", e);
            }
            byStore.computeIfAbsent(store, s -> new ArrayList<>()).add(planned);
        }
        for (List<Planned> onStore : byStore.values()) {
            Planned first = onStore.get(0);
            Path directory = first.storage().directory().toAbsolutePath();
            String setting = first.storage().setting() + " directory " + directory;
            long needed = 0;
            StringBuilder each = new StringBuilder();
            for (Planned planned : onStore) {
                needed = Math.addExact(needed, planned.bytes());
                each.append(each.length() == 0 ? "" : "; ").append("group ").append(planned.group()).append(": ")
                        .append(planned.bytes()).append(" bytes in ")
                        .append(planned.storage().directory().toAbsolutePath());
            }
            long free;
            try {
                free = disk.usableSpace(directory);
            } catch (IOException e) {
                throw new IllegalArgumentException(setting + " must report its free space; asking failed (" + e
                        + ")", e);
            }
            if (free < needed) {
                String what = onStore.size() == 1 ? needed + " bytes"
                        : needed + " bytes for " + onStore.size() + " state files on its file store (" + each + ")";
                throw new IllegalArgumentException(setting + " must have room for two slots of every buffer this "
                        + "process keeps, " + what + "; it has " + free + " bytes free");
            }
        }
    }

    /**
     * Creates this process's state file under the storage's directory for the buffers each parameter keeps, after
     * checking the directory: it exists, is a directory, and takes a new file that reads back what was written. Its
     * room was checked before, with every other file of the optimizer ({@link #requireRoom}). A refusal names the
     * directory and the rule and leaves nothing behind.
     *
     * @param storage the group's storage ({@link StateStorage.Place#FILES})
     * @param kept    per parameter, the declared buffers this process keeps, in order
     * @param rank    this process's rank (0 in a single process)
     * @param disk    the file operations ({@link #REAL})
     * @return the home
     * @throws IllegalArgumentException naming the directory, if it cannot hold the state
     */
    static FileHome open(StateStorage storage, Map<ParameterState, List<BufferSpec>> kept, int rank, Disk disk) {
        Path directory = directoryOf(storage);
        String setting = storage.setting() + " directory " + directory;
        KeptBuffers<Entry> entries = layOut(kept, new StateFileFormat.Layout());
        int index = entries.all().size();
        UUID run = UUID.randomUUID();
        String name = StateFileFormat.fileName(run, rank);
        Path file = directory.resolve(name);
        Channel channel;
        try {
            channel = disk.create(file);
        } catch (IOException e) {
            throw new IllegalArgumentException(setting + " must be writable; creating " + name + " there failed ("
                    + e + ")", e);
        }
        StateFileFormat format = new StateFileFormat(file, channel, run);
        try {
            format.writeHeader(rank, index);
        } catch (IOException | RuntimeException e) {
            closeQuietly(channel);
            deleteQuietly(file);
            throw new IllegalArgumentException(setting + " must hold files that read back what was written; "
                    + "writing and reading " + name + " there failed (" + e + ")", e);
        }
        return new FileHome(storage, file, channel, format, disk, entries);
    }

    /** The buffers' entries, their slots laid out in {@code layout} after the header. */
    private static KeptBuffers<Entry> layOut(Map<ParameterState, List<BufferSpec>> kept,
                                             StateFileFormat.Layout layout) {
        return new KeptBuffers<>(kept, buffer -> new Entry(buffer, layout), entry -> entry.buffer);
    }

    /** The state file; for tests. */
    Path file() {
        return file;
    }

    /** How many buffers the file keeps; for tests. */
    int entryCount() {
        return entries.all().size();
    }

    // ------------------------------------------------------------------ a step

    @Override
    public void checkBeforeStep() {
        requireOpen();
        await(io.submit(() -> {
            checkSlotsInForce();
            return null;
        }), "checking the slots in force");
    }

    /** {@link #checkBeforeStep}'s reads, on the I/O thread. */
    private void checkSlotsInForce() {
        long size;
        try {
            size = format.size();
        } catch (IOException e) {
            throw new StateFileException("Muon state file", file, "the file", "cannot be read (" + e + ")", e);
        }
        for (Entry entry : entries.all()) {
            if (entry.current < 0) {
                continue;
            }
            String where = entry.what() + " (slot " + entry.current + ")";
            String wrong;
            try {
                wrong = format.checkSlot(entry.slots, entry.current, entry.generation, entry.crc, size);
            } catch (IOException e) {
                throw new StateFileException("Muon state file", file, where, "cannot be read (" + e + ")", e);
            }
            if (wrong != null) {
                throw new StateFileException("Muon state file", file, where, wrong, null);
            }
        }
    }

    @Override
    public void prefetch(ParameterState state) {
        if (!storage.readAhead()) {
            return;
        }
        for (Entry entry : entries.of(state)) {
            if (entry.current < 0 || entry.pending != null) {
                continue;
            }
            Tensor target = take(entry);
            entry.prefetched = target;
            entry.pending = readInForce(entry, target);
        }
    }

    @Override
    public void bringIn(ParameterState state, boolean beforeChanges) {
        requireOpen();
        for (Entry entry : entries.of(state)) {
            Future<?> pending = entry.pending;
            Tensor target = entry.prefetched;
            entry.pending = null;
            entry.prefetched = null;
            if (pending == null && entry.current >= 0) {
                target = take(entry);
                pending = readInForce(entry, target);
            }
            if (pending == null) {
                continue;
            }
            try {
                await(pending, "reading " + entry.what());
            } catch (RuntimeException | Error e) {
                give(entry, target);
                if (beforeChanges && e instanceof StateFileFormat.SlotMismatch m) {
                    // The step's first read: nothing changed, and the file put right (or a restore) lets it go on.
                    throw new StateFileException("Muon state file", file, m.where, m.wrong, null);
                }
                throw e;
            }
            state.install(entry.buffer.spec(), target);
        }
    }

    @Override
    public void sendBack(ParameterState state) {
        List<Entry> list = entries.of(state);
        Tensor[] resident = new Tensor[list.size()];
        for (int k = 0; k < list.size(); k++) {
            resident[k] = state.evict(list.get(k).buffer.spec());
        }
        try {
            // Every buffer into the slot not in force first, then all put in force: a write that fails leaves each
            // buffer of the parameter as it was stored before this update.
            int[] crcs = new int[list.size()];
            for (int k = 0; k < list.size(); k++) {
                Entry entry = list.get(k);
                if (resident[k] != null) {
                    crcs[k] = writeSlot(entry, entry.current == 0 ? 1 : 0, entry.generation + 1, resident[k]);
                }
            }
            for (int k = 0; k < list.size(); k++) {
                Entry entry = list.get(k);
                if (resident[k] != null) {
                    entry.crc = crcs[k];
                    entry.generation++;
                    entry.current = entry.current == 0 ? 1 : 0;
                }
            }
        } finally {
            for (int k = 0; k < list.size(); k++) {
                give(list.get(k), resident[k]);
            }
        }
    }

    @Override
    public void abandon(ParameterState state) {
        for (Entry entry : entries.of(state)) {
            if (entry.pending != null) {
                // The read must end before its tensor is reused; what it found no longer matters.
                try {
                    await(entry.pending, "reading " + entry.what());
                } catch (RuntimeException | Error ignored) {
                    // no longer wanted
                }
                give(entry, entry.prefetched);
                entry.pending = null;
                entry.prefetched = null;
            }
            Tensor resident = state.evict(entry.buffer.spec());
            if (resident != null) {
                give(entry, resident);
            }
        }
    }

    // ------------------------------------------------------------------ outside a step

    @Override
    public Tensor read(ParameterState state, BufferSpec spec) {
        requireOpen();
        Entry entry = entries.find(state, spec);
        if (entry == null || entry.current < 0) {
            return null;
        }
        Tensor out = NativeLifetime.outliveScope(torch.empty(entry.buffer.shape(),
                new TensorOptions(entry.buffer.dtype()), null));
        await(readInForce(entry, out), "reading " + entry.what());
        return out;
    }

    @Override
    public void write(ParameterState state, BufferSpec spec, Tensor value) {
        requireOpen();
        staged.write(state, spec, entry -> {
            // Into the slot not in force: the one in force stays readable until the commit.
            Tensor converted = value.to(entry.buffer.dtype()).contiguous();
            int slot = entry.current == 0 ? 1 : 0;
            long generation = entry.generation + 1;
            return new SlotWrite(slot, generation, writeSlot(entry, slot, generation, converted));
        });
    }

    @Override
    public void drop(ParameterState state, BufferSpec spec) {
        staged.drop(state, spec);
    }

    @Override
    public void commitWrites() {
        staged.commit((entry, write) -> {
            entry.current = write.slot();
            entry.generation = write.generation();
            entry.crc = write.crc();
        }, entry -> entry.current = -1);
    }

    @Override
    public void discardWrites() {
        staged.discard();
    }

    @Override
    public long storedBytes(ParameterState state) {
        return entries.heldBytes(state, entry -> entry.current >= 0);
    }

    @Override
    public long workingBytes() {
        return working.bytes();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Entry entry : entries.all()) {
            if (entry.pending != null) {
                try {
                    await(entry.pending, "reading " + entry.what());
                } catch (RuntimeException | Error ignored) {
                    // closing
                }
                entry.pending = null;
                entry.prefetched = null;
            }
        }
        working.close();
        release.run();
    }

    // ------------------------------------------------------------------ slots

    /**
     * Reads the slot in force into {@code target} on the I/O thread, checked against what this run wrote there as
     * it stands now.
     */
    private Future<?> readInForce(Entry entry, Tensor target) {
        ByteBuffer[] chunks = chunks(target, entry.buffer.bytes());
        int slot = entry.current;
        long generation = entry.generation;
        int crc = entry.crc;
        return io.submit(() -> {
            format.readSlot(entry.slots, entry.what(), slot, generation, crc, chunks);
            return null;
        });
    }

    /** Writes a buffer into a slot on the I/O thread: its bytes, then its header. Returns the bytes' CRC-32C. */
    private int writeSlot(Entry entry, int slot, long generation, Tensor value) {
        ByteBuffer[] chunks = chunks(value, entry.buffer.bytes());
        return await(io.submit(() -> writeChunks(entry, slot, generation, chunks)), "writing " + entry.what());
    }

    private int writeChunks(Entry entry, int slot, long generation, ByteBuffer[] chunks) {
        try {
            return format.writeSlot(entry.slots, slot, generation, chunks);
        } catch (IOException e) {
            String free;
            try {
                free = disk.usableSpace(file.getParent()) + " bytes are free in " + file.getParent();
            } catch (IOException unknown) {
                free = "the free space in " + file.getParent() + " is unknown";
            }
            throw new UncheckedIOException("cannot store " + entry.what() + " in Muon state file " + file
                    + ": writing slot " + slot + " failed (" + e.getMessage() + "); " + free + "; "
                    + (entry.current < 0 ? "it had no stored state before"
                    : "its previous state (slot " + entry.current + ") is intact and readable"), e);
        }
    }

    // ------------------------------------------------------------------ working tensors

    /** A tensor of the entry's shape and dtype in working memory. */
    private Tensor take(Entry entry) {
        return working.take(entry.buffer.shape(), entry.buffer.dtype(), entry.buffer.bytes());
    }

    /**
     * Gives a tensor of the entry back to working memory, or frees it (a buffer its update created at its first
     * use); every read and write of it has ended.
     */
    private void give(Entry entry, Tensor t) {
        if (t != null && !working.giveBack(t)) {
            t.close();
        }
    }

    /** A contiguous CPU tensor's bytes as buffers of at most {@link #CHUNK} bytes. */
    private static ByteBuffer[] chunks(Tensor t, long bytes) {
        if (bytes == 0) {
            return new ByteBuffer[0];
        }
        Pointer data = t.data_ptr();
        ByteBuffer[] out = new ByteBuffer[(int) ((bytes + CHUNK - 1) / CHUNK)];
        for (int i = 0; i < out.length; i++) {
            long offset = (long) i * CHUNK;
            long length = Math.min(CHUNK, bytes - offset);
            out[i] = new BytePointer(data).position(offset).limit(offset + length).asByteBuffer();
        }
        return out;
    }

    // ------------------------------------------------------------------ helpers

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the Muon state file " + file + " was removed by close(); a closed "
                    + "optimizer keeps no state");
        }
    }

    /**
     * Waits for a task of the I/O thread without giving in to an interrupt (the thread's interrupt flag is set again
     * afterwards), and rethrows what it threw.
     */
    private <T> T await(Future<T> task, String what) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return task.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    if (e.getCause() instanceof Error r) {
                        throw r;
                    }
                    throw new IllegalStateException(what + " in Muon state file " + file + " failed", e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // the file is deleted next
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // best effort; docs/api.md says how to clean up by hand
        }
    }
}
