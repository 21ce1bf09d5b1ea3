package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.TrainingOptimizer;
import dev.muon.state.OptimizerState;
import dev.muon.state.StateFileException;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The faults of {@link StateStorage#files}: a directory that is missing, a file, read-only, full or cannot hold files
 * is refused at build, naming it, with nothing changed and nothing left behind; a state file truncated, altered or
 * of another run is refused naming the buffer; a full disk during a write leaves the previous state readable and a
 * restore goes on from there; {@code close()} removes the file, and so does collecting an optimizer dropped without
 * it, never another's; several groups' files on one file store must fit its free space together, at build. Faults
 * a root-run test cannot make for real (a read-only or full directory) are injected through the file operations
 * ({@link FileHome.Disk}), as {@code CheckpointFileTest} fills a disk through an injected channel.
 */
@ExtendWith(NativeScopePerTest.class)
class StateFilesFaultsTest {
    /** float32 [8, 8]: a momentum buffer of 256 bytes, one 4096-byte block of data per slot. */
    private static final long[] SHAPE = {8, 8};

    @TempDir
    Path dir;

    private static Tensor parameter() {
        torch.manual_seed(5);
        return torch.randn(SHAPE);
    }

    private static void gradient(Tensor p, int step) {
        torch.manual_seed(50 + step);
        p.mutable_grad().put(torch.randn(p.shape()));
    }

    private static Muon muon(Tensor p, StateStorage storage, FileHome.Disk disk) {
        return Muon.builder().addGroup(List.of(p), MuonConfig.defaults().withLr(0.02)).stateStorage(storage)
                .stateDisk(disk).build();
    }

    /** A MuonAdamW with {@code p}, as {@code fc.weight}, on Muon. */
    private static MuonAdamW muonAdamW(Tensor p, StateStorage storage) {
        return MuonAdamW.builder(java.util.Map.of("fc.weight", p)).muonWhen((n, t) -> true).outputLayerOnAdamW(false)
                .muonStateStorage(storage).build();
    }

    private List<Path> files() throws IOException {
        try (Stream<Path> list = Files.list(dir)) {
            return list.toList();
        }
    }

    // ------------------------------------------------------------------ at build

    /** A disk with a fault, from the real one. */
    private record FaultyDisk(long usableSpace, IOException onCreate, boolean readsZeros) implements FileHome.Disk {
        @Override
        public long usableSpace(Path directory) throws IOException {
            return usableSpace >= 0 ? usableSpace : FileHome.REAL.usableSpace(directory);
        }

        @Override
        public FileHome.Channel create(Path file) throws IOException {
            if (onCreate != null) {
                throw onCreate;
            }
            FileHome.Channel real = FileHome.REAL.create(file);
            if (!readsZeros) {
                return real;
            }
            return new ForwardingChannel(real) {
                @Override
                public int read(ByteBuffer dst, long position) {
                    int n = dst.remaining();
                    dst.put(new byte[n]);
                    return n;
                }
            };
        }
    }

    /** A channel that passes every call to the real one: the faulty disks override the call they break. */
    private static class ForwardingChannel implements FileHome.Channel {
        private final FileHome.Channel real;

        ForwardingChannel(FileHome.Channel real) {
            this.real = real;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            return real.read(dst, position);
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            return real.write(src, position);
        }

        @Override
        public long size() throws IOException {
            return real.size();
        }

        @Override
        public void close() throws IOException {
            real.close();
        }
    }

    static Stream<Arguments> refusedDirectories() {
        // 4096 (the header) + 2 slots × (4096 header block + 4096 data)
        long needed = 4096 + 2 * (4096 + 4096);
        return Stream.of(
                Arguments.of("missing", (Function<Path, Path>) d -> d.resolve("absent"), FileHome.REAL,
                        " must be an existing directory; it does not exist"),
                Arguments.of("a file", (Function<Path, Path>) StateFilesFaultsTest::aFile, FileHome.REAL,
                        " must be a directory; it is a file"),
                Arguments.of("read-only", (Function<Path, Path>) d -> d, new FaultyDisk(-1,
                        new AccessDeniedException("muon-state.bin", null, "Permission denied"), false),
                        " must be writable; creating muon-state-"),
                Arguments.of("full", (Function<Path, Path>) d -> d, new FaultyDisk(needed - 1, null, false),
                        " must have room for two slots of every buffer this process keeps, " + needed
                                + " bytes; it has " + (needed - 1) + " bytes free"),
                Arguments.of("unable to hold files", (Function<Path, Path>) d -> d, new FaultyDisk(-1, null, true),
                        " must hold files that read back what was written; writing and reading muon-state-"));
    }

    private static Path aFile(Path d) {
        try {
            return Files.writeString(d.resolve("not-a-directory"), "x");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusedDirectories")
    void directory_thatCannotHoldTheState_isRefusedAtBuild_namingIt_withNothingChanged(
            String fault, Function<Path, Path> directory, FileHome.Disk disk, String rule) throws IOException {
        Path target = directory.apply(dir);
        List<Path> before = files();
        Tensor p = parameter();
        Tensor initial = p.clone();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> muon(p, StateStorage.files(target), disk));
        assertTrue(e.getMessage().startsWith("stateStorage FILES directory " + target.toAbsolutePath() + rule),
                e.getMessage());
        assertTrue(p.equal(initial), "the build changed the parameter");
        assertEquals(before, files(), "the refused build left a file");
    }

    /** float32 [64, 80]: a momentum buffer of 20,480 bytes, whose file takes 4096 + 2 × (4096 + 20,480) bytes. */
    private static final long GROUP_FILE = 4096 + 2 * (4096 + 64 * 80 * 4);

    private static Tensor wide(int seed) {
        torch.manual_seed(seed);
        return torch.randn(64, 80);
    }

    /** Two groups of one [64, 80] parameter each, every group's state in {@code first}, then group 1's in another. */
    private static Muon twoGroups(Tensor a, Tensor b, Path first, Path second, FileHome.Disk disk) {
        return Muon.builder().addGroup(List.of(a), MuonConfig.defaults().withLr(0.02))
                .addGroup(List.of(b), MuonConfig.defaults().withLr(0.01)).stateStorage(StateStorage.files(first))
                .stateStorage(1, StateStorage.files(second)).stateDisk(disk).build();
    }

    static Stream<Arguments> twoGroupsOnOneStore() {
        return Stream.of(
                Arguments.of("one directory", (Function<Path, Path>) d -> d),
                Arguments.of("two directories", (Function<Path, Path>) d -> {
                    try {
                        return Files.createDirectory(d.resolve("group1"));
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("twoGroupsOnOneStore")
    void twoGroupsOnOneFileStore_withRoomForOne_areRefusedAtBuild_namingBoth(
            String where, Function<Path, Path> secondDirectory) throws IOException {
        Path second = secondDirectory.apply(dir);
        List<Path> before = files();
        Tensor a = wide(1);
        Tensor b = wide(2);
        Tensor initialA = a.clone();
        Tensor initialB = b.clone();
        // Room for one group's file and a third of another's: each alone fits, the two do not.
        long free = GROUP_FILE + 16384;
        assertEquals(69_632, free);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> twoGroups(a, b, dir, second, new FaultyDisk(free, null, false)));
        String first = dir.toAbsolutePath().toString();
        assertEquals("stateStorage FILES directory " + first + " must have room for two slots of every buffer this "
                + "process keeps, " + 2 * GROUP_FILE + " bytes for 2 state files on its file store (group 0: "
                + GROUP_FILE + " bytes in " + first + "; group 1: " + GROUP_FILE + " bytes in "
                + second.toAbsolutePath() + "); it has " + free + " bytes free", e.getMessage());
        assertTrue(a.equal(initialA) && b.equal(initialB), "the refused build changed a parameter");
        assertEquals(before, files(), "the refused build left a file");
        if (!second.equals(dir)) {
            try (Stream<Path> left = Files.list(second)) {
                assertEquals(List.of(), left.toList(), "the refused build left a file");
            }
        }
    }

    @Test
    void twoGroupsInOneDirectory_withRoomForBoth_buildAndStep_toTheLengthCheckedAtBuild() throws IOException {
        Tensor a = wide(1);
        Tensor b = wide(2);
        Muon muon = twoGroups(a, b, dir, dir, new FaultyDisk(2 * GROUP_FILE, null, false));
        for (int step = 1; step <= 2; step++) {
            for (Tensor p : List.of(a, b)) {
                torch.manual_seed(70 + step);
                p.mutable_grad().put(torch.randn(p.shape()));
            }
            muon.step();
        }
        // Two steps wrote both slots of both buffers: the files are as long as the build counted.
        assertEquals(2, files().size());
        for (Path file : files()) {
            assertEquals(GROUP_FILE, Files.size(file), file.toString());
        }
        muon.close();
        assertEquals(List.of(), files(), "close() left a state file");
    }

    @Test
    void readOnlyDirectory_forReal_isRefusedAtBuild() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeFalse("root".equals(System.getProperty("user.name")),
                "root writes to a read-only directory; the injected fault above covers it");
        Path readOnly = Files.createDirectory(dir.resolve("read-only"));
        assertTrue(readOnly.toFile().setWritable(false, false));
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> muon(parameter(), StateStorage.files(readOnly), FileHome.REAL));
            assertTrue(e.getMessage().startsWith("stateStorage FILES directory " + readOnly.toAbsolutePath()
                    + " must be writable"), e.getMessage());
        } finally {
            readOnly.toFile().setWritable(true, false);
        }
    }

    @Test
    void hostMemory_forACpuParameter_isRefusedAtBuild_namingTheParameter() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Muon.builder().addGroup(List.of(parameter()), MuonConfig.defaults())
                        .stateStorage(StateStorage.hostMemory()).build());
        assertEquals("stateStorage HOST_MEMORY keeps the state of accelerator parameters in host memory; parameter "
                + "0 of group 0 (group 0) is on cpu, where its state is in host memory already: use "
                + "StateStorage.withParameter(), or StateStorage.files(directory) to keep it out of memory",
                e.getMessage());
    }

    @Test
    void storageValues_areValidated() {
        assertThrows(NullPointerException.class, () -> StateStorage.files(null));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new StateStorage(StateStorage.Place.HOST_MEMORY, dir, true));
        assertEquals("stateStorage directory is for FILES only; HOST_MEMORY got directory " + dir, e.getMessage());
        IllegalArgumentException readAhead = assertThrows(IllegalArgumentException.class,
                () -> StateStorage.withParameter().withReadAhead(false));
        assertEquals("stateStorage readAhead is for HOST_MEMORY and FILES only (WITH_PARAMETER brings no buffer in); "
                + "WITH_PARAMETER got readAhead false", readAhead.getMessage());
        assertEquals(StateStorage.withParameter(), StateStorage.withParameter().withReadAhead(true));
        IllegalArgumentException group = assertThrows(IllegalArgumentException.class,
                () -> Muon.builder().addGroup(List.of(parameter()), MuonConfig.defaults())
                        .stateStorage(3, StateStorage.files(dir)).build());
        assertEquals("stateStorage group must be in [0, 1), got 3", group.getMessage());
    }

    // ------------------------------------------------------------------ between steps

    /** The momentum buffer's slots: data of slot s at 4096 + s·(4096 + 4096) + 4096. */
    private static long dataOf(int slot) {
        return FileHome.ALIGN + slot * (2L * FileHome.ALIGN) + FileHome.ALIGN;
    }

    private static Path stateFile(Muon muon) {
        return ((FileHome) muon.stateHomes().get(0)).file();
    }

    /** The third step, with its gradient, is refused with {@code type} and leaves the parameter as it was. */
    private static <E extends RuntimeException> E refusedThirdStep(Muon muon, Tensor p, Class<E> type) {
        Tensor before = p.clone();
        gradient(p, 3);
        E e = assertThrows(type, muon::step);
        assertTrue(p.equal(before), "the refused step changed the parameter");
        return e;
    }

    /**
     * After a restore of {@code saved}, the refused step {@code step} taken again (its gradient set) gives the
     * fault-free run; then closes.
     */
    private static void restoredGoesOn(Muon muon, Tensor p, OptimizerState saved, int step) {
        muon.restore(saved);
        muon.step();
        assertTrue(p.equal(resident(step)), "after the restore the run differs from one without a fault");
        muon.close();
    }

    /** A Muon over {@link #parameter()} with its state in a file, after two steps; its state and file then. */
    private record SteppedTwice(Tensor p, Muon muon, OptimizerState saved, Path file) {
    }

    private SteppedTwice steppedTwiceInAFile() {
        Tensor p = parameter();
        Muon muon = muon(p, StateStorage.files(dir), FileHome.REAL);
        steps(muon, p, 2);
        return new SteppedTwice(p, muon, muon.state(), stateFile(muon));
    }

    @Test
    void truncatedStateFile_isRefusedBeforeTheStepChangesAnything_namingTheBuffer() throws IOException {
        SteppedTwice run = steppedTwiceInAFile();
        Path file = run.file();
        long length = Files.size(file);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.truncate(length - 100);
        }
        StateFileException e = refusedThirdStep(run.muon(), run.p(), StateFileException.class);
        // Two steps wrote slot 0, then slot 1, the last thing in the file.
        assertEquals("Muon state file " + file + ": the momentum buffer of parameter 0 of group 0 (slot 1) ends at "
                + "byte " + length + " but the file has " + (length - 100) + " bytes: it was truncated since this run "
                + "wrote it; nothing was changed", e.getMessage());
        assertEquals(2, run.muon().stepCount());
        // Not part-way: a restore writes the state anew and the optimizer goes on as one that was never damaged.
        restoredGoesOn(run.muon(), run.p(), run.saved(), 3);
    }

    @Test
    void alteredStateFile_isRefused_namingTheBuffer() throws IOException {
        SteppedTwice run = steppedTwiceInAFile();
        Path file = run.file();
        flip(file, 0, 1);
        // The buffer is read before its parameter's update: with one parameter, nothing changed.
        IllegalStateException e = refusedThirdStep(run.muon(), run.p(), IllegalStateException.class);
        assertChecksumRefused(e, file, 0, "nothing was changed");
        restoredGoesOn(run.muon(), run.p(), run.saved(), 3);
    }

    // ------------------------------------------------------------------ during a step's reads

    /** Two [8, 8] parameters updated one after the other (no same-shape batch), their buffers in a state file. */
    private static Muon twoParameters(Tensor a, Tensor b, StateStorage storage, boolean readAhead) {
        StateStorage placed = storage.place() == StateStorage.Place.FILES
                ? storage.withReadAhead(readAhead) : storage;
        return Muon.builder().addGroup(List.of(a, b), MuonConfig.defaults().withLr(0.02).withBatchSameShape(false))
                .stateStorage(placed).build();
    }

    private static Tensor[] twoParameters() {
        Tensor a = parameter();
        torch.manual_seed(6);
        return new Tensor[]{a, torch.randn(SHAPE)};
    }

    private static void gradients(Tensor[] ps, int step) {
        gradient(ps[0], step);
        torch.manual_seed(80 + step);
        ps[1].mutable_grad().put(torch.randn(SHAPE));
    }

    /**
     * The refusal of slot 1 of parameter {@code parameter}'s momentum buffer, altered since this run wrote it,
     * ending in {@code wayOn}.
     */
    private static void assertChecksumRefused(RuntimeException e, Path file, int parameter, String wayOn) {
        assertTrue(e.getMessage().startsWith("Muon state file " + file + ": the momentum buffer of parameter "
                + parameter + " of group 0 (slot 1) does not match the checksum this run wrote (CRC-32C 0x"),
                e.getMessage());
        assertTrue(e.getMessage().endsWith("read): it was altered or damaged since; " + wayOn), e.getMessage());
    }

    /** Steps with the two parameters' gradients 1 to {@code steps}. */
    private static void steps(Muon muon, Tensor[] ps, int steps) {
        for (int step = 1; step <= steps; step++) {
            gradients(ps, step);
            muon.step();
        }
    }

    /** Flips one bit of entry {@code entry}'s data in {@code slot}; returns the byte as it was. */
    private static byte flip(Path file, int entry, int slot) throws IOException {
        // Each entry of this layout takes two slots of 4096 + 4096 bytes.
        long at = dataOf(slot) + entry * (4L * FileHome.ALIGN) + 17;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            channel.read(one, at);
            byte was = one.get(0);
            one.put(0, (byte) (was ^ 0x10)).rewind();
            channel.write(one, at);
            return was;
        }
    }

    private static void put(Path file, int entry, int slot, byte value) throws IOException {
        long at = dataOf(slot) + entry * (4L * FileHome.ALIGN) + 17;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[]{value}), at);
        }
    }

    static Stream<Arguments> readAhead() {
        return Stream.of(Arguments.of(true), Arguments.of(false));
    }

    /**
     * The first buffer a step reads, altered: the step is refused before any parameter or buffer changed, says so,
     * and leaves the optimizer usable: with the file's bytes put back, the run goes on as one never damaged.
     */
    @ParameterizedTest(name = "readAhead {0}")
    @MethodSource("readAhead")
    void alteredFirstBuffer_isRefusedChangingNothing_andTheRepairedFileGoesOn(boolean readAhead)
            throws IOException {
        Tensor[] ps = twoParameters();
        Muon muon = twoParameters(ps[0], ps[1], StateStorage.files(dir), readAhead);
        steps(muon, ps, 2);
        Tensor a = ps[0].clone();
        Tensor b = ps[1].clone();
        Tensor momentumA = muon.momentumBuffer(ps[0]).orElseThrow().clone();
        Tensor momentumB = muon.momentumBuffer(ps[1]).orElseThrow().clone();
        Path file = stateFile(muon);
        byte was = flip(file, 0, 1);
        gradients(ps, 3);

        StateFileException e = assertThrows(StateFileException.class, muon::step);
        assertChecksumRefused(e, file, 0, "nothing was changed");
        assertTrue(ps[0].equal(a) && ps[1].equal(b), "the refused step changed a parameter");
        assertTrue(muon.momentumBuffer(ps[1]).orElseThrow().equal(momentumB), "the refused step changed a buffer");
        assertEquals(2, muon.stepCount());

        put(file, 0, 1, was);
        assertTrue(muon.momentumBuffer(ps[0]).orElseThrow().equal(momentumA), "the repaired buffer differs");
        muon.step();
        assertEquals(3, muon.stepCount());
        Tensor[] unharmed = twoParameters();
        Muon resident = twoParameters(unharmed[0], unharmed[1], StateStorage.withParameter(), readAhead);
        steps(resident, unharmed, 3);
        assertTrue(ps[0].equal(unharmed[0]) && ps[1].equal(unharmed[1]),
                "after the repair the run differs from one without a fault");
        assertTrue(muon.momentumBuffer(ps[0]).orElseThrow().equal(resident.momentumBuffer(unharmed[0]).orElseThrow())
                && muon.momentumBuffer(ps[1]).orElseThrow().equal(resident.momentumBuffer(unharmed[1])
                .orElseThrow()), "after the repair the momentum differs from one without a fault");
        muon.close();
    }

    /**
     * A buffer altered that the step reads after its first update changed a parameter: the step is part-way, and
     * the optimizer refuses to build on it until a restore, as before.
     */
    @ParameterizedTest(name = "readAhead {0}")
    @MethodSource("readAhead")
    void alteredBufferReadAfterAnUpdate_leavesTheStepPartWay(boolean readAhead) throws IOException {
        Tensor[] ps = twoParameters();
        Muon muon = twoParameters(ps[0], ps[1], StateStorage.files(dir), readAhead);
        steps(muon, ps, 2);
        OptimizerState saved = muon.state();
        Tensor a = ps[0].clone();
        Path file = stateFile(muon);
        flip(file, 1, 1);
        gradients(ps, 3);

        IllegalStateException e = assertThrows(IllegalStateException.class, muon::step);
        assertFalse(e instanceof StateFileException, e.getMessage());
        assertChecksumRefused(e, file, 1, "restore a saved state (load or restore) to go on");
        assertFalse(ps[0].equal(a), "the first parameter's update ran before the altered buffer was read");
        IllegalStateException refused = assertThrows(IllegalStateException.class, muon::step);
        assertTrue(refused.getMessage().startsWith("Muon.step() refused: step 3 failed after it had begun changing "
                + "parameters"), refused.getMessage());
        muon.restore(saved);
        muon.close();
    }

    @Test
    void stateFileOfAnotherRun_isNeverRead() throws IOException {
        Tensor a = parameter();
        Tensor b = parameter();
        Muon first = muon(a, StateStorage.files(dir), FileHome.REAL);
        Muon second = muon(b, StateStorage.files(dir), FileHome.REAL);
        // Two runs in one directory, interleaved: each reads only its own file.
        for (int step = 1; step <= 2; step++) {
            gradient(a, step);
            first.step();
            gradient(b, step);
            second.step();
        }
        assertTrue(a.equal(resident(2)) && b.equal(resident(2)), "two runs in one directory disturbed each other");
        // The first run's bytes written over the second's file (in place: a file put over it by a rename is a new
        // file, and the run goes on reading its own, open one): the same layout, another run's identity.
        Files.write(stateFile(second), Files.readAllBytes(stateFile(first)));
        gradient(b, 3);
        StateFileException e = assertThrows(StateFileException.class, second::step);
        assertTrue(e.getMessage().startsWith("Muon state file " + stateFile(second) + ": the momentum buffer of "
                + "parameter 0 of group 0 (slot 1) holds run "), e.getMessage());
        assertTrue(e.getMessage().endsWith("'s state, not this run's (" + runOf(stateFile(second)) + "): a state "
                + "file of another run is never read; nothing was changed"), e.getMessage());
        first.close();
        second.close();
    }

    /** The run identity in a state file's name, as a UUID. */
    private static String runOf(Path file) {
        String hex = file.getFileName().toString().substring("muon-state-".length(), "muon-state-".length() + 32);
        return hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-"
                + hex.substring(16, 20) + "-" + hex.substring(20);
    }

    // ------------------------------------------------------------------ during a write

    /** The real disk, whose writes fail with ENOSPC's message while {@code full} is set. */
    private static final class FillingDisk implements FileHome.Disk {
        volatile boolean full;

        @Override
        public long usableSpace(Path directory) throws IOException {
            return FileHome.REAL.usableSpace(directory);
        }

        @Override
        public FileHome.Channel create(Path file) throws IOException {
            FileHome.Channel real = FileHome.REAL.create(file);
            return new ForwardingChannel(real) {
                @Override
                public int write(ByteBuffer src, long position) throws IOException {
                    if (full) {
                        // Half of it first, as a disk that fills up in the middle of a write.
                        ByteBuffer half = src.duplicate();
                        half.limit(half.position() + half.remaining() / 2);
                        int n = real.write(half, position);
                        src.position(src.position() + n);
                        throw new IOException("No space left on device");
                    }
                    return super.write(src, position);
                }
            };
        }
    }

    @Test
    void fullDiskDuringAWrite_leavesThePreviousStateReadable_andARestoreGoesOn() {
        Tensor p = parameter();
        FillingDisk disk = new FillingDisk();
        Muon muon = muon(p, StateStorage.files(dir), disk);
        steps(muon, p, 1);
        OptimizerState afterOne = muon.state();
        Tensor momentum = muon.momentumBuffer(p).orElseThrow().clone();
        disk.full = true;
        gradient(p, 2);
        UncheckedIOException e = assertThrows(UncheckedIOException.class, muon::step);
        Path file = stateFile(muon);
        assertTrue(e.getMessage().startsWith("cannot store the momentum buffer of parameter 0 of group 0 in Muon "
                + "state file " + file + ": writing slot 1 failed (No space left on device); "), e.getMessage());
        assertTrue(e.getMessage().endsWith("; its previous state (slot 0) is intact and readable"), e.getMessage());
        // The step failed after the parameter's update: part-way, as any step that fails after a change is.
        IllegalStateException refused = assertThrows(IllegalStateException.class, muon::step);
        assertTrue(refused.getMessage().startsWith("Muon.step() refused: step 2 failed after it had begun changing "
                + "parameters"), refused.getMessage());
        assertTrue(muon.momentumBuffer(p).orElseThrow().equal(momentum), "the previous state is not readable");
        // A restore onto the full disk fails too, and changes nothing.
        UncheckedIOException restoring = assertThrows(UncheckedIOException.class, () -> muon.restore(afterOne));
        assertTrue(restoring.getMessage().contains("No space left on device"), restoring.getMessage());
        assertTrue(muon.momentumBuffer(p).orElseThrow().equal(momentum), "the failed restore changed the state");
        // With room again, the restore takes, and the run goes on as one without a fault.
        disk.full = false;
        gradient(p, 2);
        restoredGoesOn(muon, p, afterOne, 2);
    }

    // ------------------------------------------------------------------ close

    @Test
    void close_removesTheFile_andRefusesWhatNeedsTheState() throws IOException {
        Tensor p = parameter();
        Muon muon = muon(p, StateStorage.files(dir), FileHome.REAL);
        steps(muon, p, 1);
        assertEquals(1, files().size());
        muon.close();
        assertEquals(List.of(), files(), "close() left the state file");
        IllegalStateException e = assertThrows(IllegalStateException.class, muon::step);
        assertEquals("Muon.step() on a closed Muon: close() released its state", e.getMessage());
        assertThrows(IllegalStateException.class, muon::state);
        assertThrows(IllegalStateException.class, () -> muon.momentumBuffer(p));
        muon.close();

        MuonAdamW adamW = muonAdamW(parameter().requires_grad_(true), StateStorage.files(dir));
        assertEquals(1, files().size());
        adamW.close();
        assertEquals(List.of(), files(), "MuonAdamW.close() left the state file");
        IllegalStateException closed = assertThrows(IllegalStateException.class, adamW::step);
        assertEquals("MuonAdamW.step() on a closed MuonAdamW: close() released its state", closed.getMessage());
        assertFalse(Files.exists(dir.resolve("absent")));
    }

    /** What is left of an optimizer built with its state in files under {@code dir}, stepped once and dropped. */
    private record Dropped(Path file, WeakReference<Object> optimizer) {
    }

    /** Builds, steps once and forgets an optimizer: only its state file's path and a weak reference come back. */
    private Dropped droppedAfterOneStep(String kind) throws IOException {
        List<Path> before = files();
        Tensor p = parameter().requires_grad_(true);
        TrainingOptimizer optimizer = kind.equals("Muon") ? muon(p, StateStorage.files(dir), FileHome.REAL)
                : muonAdamW(p, StateStorage.files(dir));
        steps(optimizer, p, 1);
        List<Path> made = new java.util.ArrayList<>(files());
        made.removeAll(before);
        assertEquals(1, made.size(), "one state file");
        return new Dropped(made.get(0), new WeakReference<>(optimizer));
    }

    /** Collects until {@code done} holds, for at most 5 s; whether it came to hold. */
    private static boolean collectingUntil(BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            System.gc();
            Thread.sleep(10);
        }
        return true;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"Muon", "MuonAdamW"})
    void optimizerDroppedWithoutClose_hasItsStateFileRemoved_onceCollected(String kind) throws Exception {
        Dropped dropped = droppedAfterOneStep(kind);
        assertTrue(Files.exists(dropped.file()));
        assertTrue(collectingUntil(() -> !Files.exists(dropped.file())), "the state file of a dropped " + kind
                + " was still there 5 s later: " + dropped.file() + " (collected: "
                + (dropped.optimizer().get() == null) + ")");
    }

    @Test
    void droppedOptimizer_isCleaned_whileAnotherInTheSameDirectoryKeepsItsFile() throws Exception {
        Tensor b = parameter();
        Muon kept = muon(b, StateStorage.files(dir), FileHome.REAL);
        steps(kept, b, 1);
        Dropped dropped = droppedAfterOneStep("Muon");
        assertTrue(collectingUntil(() -> !Files.exists(dropped.file())), "the dropped optimizer's file stayed");
        assertEquals(List.of(stateFile(kept)), files(), "the cleaner removed another optimizer's file");
        gradient(b, 2);
        kept.step();
        assertTrue(b.equal(resident(2)), "the optimizer that was kept differs from one never disturbed");
        kept.close();
        assertEquals(List.of(), files());
    }

    @Test
    void closedThenCollected_doesNothingTwice() throws Exception {
        Dropped closed = closedAfterOneStep();
        assertFalse(Files.exists(closed.file()), "close() left the state file");
        // A file that appears at its name afterwards is not the optimizer's: collection must leave it.
        Files.writeString(closed.file(), "not the optimizer's");
        assertTrue(collectingUntil(() -> closed.optimizer().get() == null), "the closed optimizer was not collected");
        // The cleaner runs after the weak reference is cleared: give it the time it takes a dropped one.
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertTrue(Files.exists(closed.file()), "collection of a closed optimizer removed a file again");
        Files.delete(closed.file());
    }

    private Dropped closedAfterOneStep() {
        Tensor p = parameter();
        Muon muon = muon(p, StateStorage.files(dir), FileHome.REAL);
        steps(muon, p, 1);
        Path file = stateFile(muon);
        muon.close();
        muon.close();
        return new Dropped(file, new WeakReference<>(muon));
    }

    /** The parameter after {@code steps} steps with its state beside it: the run every fault must come back to. */
    private static Tensor resident(int steps) {
        Tensor p = parameter();
        steps(muon(p, StateStorage.withParameter(), FileHome.REAL), p, steps);
        return p;
    }

    /** Steps with gradients 1 to {@code steps}. */
    private static void steps(TrainingOptimizer optimizer, Tensor p, int steps) {
        for (int step = 1; step <= steps; step++) {
            gradient(p, step);
            optimizer.step();
        }
    }
}
