package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.internal.Messages;
import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.StringVector;
import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The checkpoint format of {@link MuonAdamW} and {@link Muon}: writes a {@link CheckpointState} to one libtorch archive (the zip
 * format of {@code torch::save}) and reads one back, checked against the state the reader expects. It knows
 * nothing of the optimizer. The archive holds
 * <pre>
 *   format          "dev.muon.checkpoint"
 *   format_version  2 (1: the same entries, written before the checksum trailer; still read, with a warning)
 *   step            the step count
 *   assignment      the layout: one line per named parameter: kind, name, shape, dtype, the name it is tied to,
 *                   and, only where one is set, its {@link RowSplit}
 *   muon_config, adamw_config   the configs as key=value text ({@link ConfigText}); no adamw_config for a Muon
 *   muon_groups, muon_config_g  a Muon with several groups: their count, and group g's config (g >= 1)
 *   schedule_initial_lrs, schedule   the optimizer's {@link ScheduleRecord}, when it has one
 *   muon_param_i, muon_momentum_i, adamw_param_i   the parameters and Muon's buffers, in table order
 *   muon_normuon_v_i   NorMuon's per-row second moment of Muon parameter i; absent without NorMuon
 *   adamw           libtorch AdamW's own archive ({@code AdamW::save}): moments, step counts, options
 * </pre>
 * followed by the trailer of {@link ArchiveFile}: a SHA-256 of every byte before it, verified before libtorch parses
 * anything. A save writes a temporary file in the same directory through Java channels (a full disk is an
 * exception, never a crash), forces it to disk and renames it over the target, so the
 * target is always either the old file or the new one. A read checks everything before it returns; the optimizer
 * changes nothing until then. Distributed, rank 0 writes and every rank learns whether it succeeded, and on a read
 * the ranks agree that all of them read the same content before any of them goes on. See
 * {@code docs/checkpoints.md}.
 */
final class Checkpoint {
    static final String FORMAT = "dev.muon.checkpoint";
    /** Version 2: version 1's entries, with the SHA-256 trailer of {@link ArchiveFile}. */
    static final long FORMAT_VERSION = 2;
    /** Written before checksums; still read, with a warning. */
    static final long UNCHECKSUMMED_VERSION = 1;
    private static final System.Logger LOG = System.getLogger(Checkpoint.class.getName());

    private Checkpoint() {
    }

    /**
     * Writes a state atomically.
     *
     * @param path  the target
     * @param state what to write
     * @throws UncheckedIOException if the file cannot be written; {@code path} is then unchanged
     */
    static void write(Path path, CheckpointState state) {
        write(path, state, p -> FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
    }

    /**
     * {@link #write(Path, CheckpointState)} through the given opener of the temporary file (tests inject a full
     * disk here).
     */
    static void write(Path path, CheckpointState state, ArchiveFile.Opener opener) {
        Path target = path.toAbsolutePath();
        Path dir = target.getParent();
        Path tmp = dir.resolve("." + target.getFileName() + ".tmp-" + ProcessHandle.current().pid() + "-"
                + System.nanoTime());
        try {
            OutputArchive out = new OutputArchive();
            out.write("format", new IValue(FORMAT));
            out.write("format_version", new IValue(FORMAT_VERSION));
            out.write("step", new IValue(state.step()));
            out.write("assignment", new IValue(state.layout()));
            out.write("muon_config", new IValue(ConfigText.of(state.muonConfigs().get(0))));
            if (state.muonConfigs().size() > 1) {
                out.write("muon_groups", new IValue((long) state.muonConfigs().size()));
                for (int g = 1; g < state.muonConfigs().size(); g++) {
                    out.write("muon_config_" + g, new IValue(ConfigText.of(state.muonConfigs().get(g))));
                }
            }
            if (state.adamWConfig() != null) {
                out.write("adamw_config", new IValue(ConfigText.of(state.adamWConfig())));
            }
            for (int i = 0; i < state.muonParams().size(); i++) {
                out.write("muon_param_" + i, state.muonParams().get(i).detach());
                Tensor momentum = state.muonMomentum().get(i);
                if (momentum != null) {
                    out.write("muon_momentum_" + i, momentum);
                }
                NorMuonEntries.write(out, i, state.muonSecondMoments().get(i));
            }
            for (int i = 0; i < state.adamWParams().size(); i++) {
                out.write("adamw_param_" + i, state.adamWParams().get(i).detach());
            }
            if (state.adamW() != null) {
                out.write("adamw", state.adamW().forWriting());
            }
            if (state.schedule() != null) {
                StringBuilder lrs = new StringBuilder();
                for (double lr : state.schedule().initialLrs()) {
                    lrs.append(lrs.length() == 0 ? "" : ",").append(lr);
                }
                out.write("schedule_initial_lrs", new IValue(lrs.toString()));
                out.write("schedule", new IValue(state.schedule().schedule()));
            }
            try {
                ArchiveFile.write(out, tmp, opener);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot save checkpoint " + target + ": writing " + tmp + " failed ("
                        + e.getMessage() + "); " + freeSpace(dir) + "; the previous checkpoint, if any, is intact",
                        e);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new UncheckedIOException(new IOException("cannot replace " + target
                        + " atomically on this file system", e));
            }
            forceDirectory(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot save checkpoint " + target, e);
        } finally {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // best effort: the target is intact either way
            }
        }
    }

    /**
     * Writes a distributed optimizer's state: rank 0 writes (its state holds every rank's momentum, see
     * {@link Muon#momentumForCheckpoint}), then every rank learns whether the write succeeded. A collective.
     *
     * @throws UncheckedIOException on every rank if rank 0 could not write; {@code path} is then unchanged
     */
    static void write(Path path, CheckpointState state, DistributedGroup group) {
        RuntimeException failure = null;
        if (group.rank() == 0) {
            try {
                write(path, state);
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        // Only rank 0 writes, so the sum is rank 0's status.
        long[] failed = group.allReduceSum(new long[]{failure == null ? 0 : 1}, "the checkpoint's save status");
        if (failure != null) {
            throw failure;
        }
        if (failed[0] != 0) {
            throw new UncheckedIOException(new IOException("rank 0 could not write checkpoint " + path
                    + " (see rank 0's error); the previous file, if any, is intact"));
        }
    }

    private static String freeSpace(Path dir) {
        try {
            return Files.getFileStore(dir).getUsableSpace() + " bytes are free in " + dir;
        } catch (IOException e) {
            return "the free space in " + dir + " is unknown";
        }
    }

    /** Makes the rename durable; not every platform can open a directory, and then the rename is still atomic. */
    private static void forceDirectory(Path dir) {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // Windows cannot open directories; the rename itself is still atomic there
        }
    }

    /**
     * Reads a checkpoint on every rank of a group, and makes the ranks agree on what they read: the step and a
     * SHA-256 of the file's content. A rank that fails, or that read other content (another copy, another step),
     * fails every rank before any of them changes anything. A collective.
     *
     * @throws IllegalStateException on every rank if any rank's read fails or the ranks read different content
     */
    static CheckpointState read(Path path, CheckpointState expected, DistributedGroup group) {
        return group.agree("the step and content of checkpoint " + path, () -> readChecked(path, expected),
                read -> "step=" + read.state.step() + " sha256=" + read.sha256).state;
    }

    /** A state read from a file, with the SHA-256 of the file's bytes. */
    private record Read(CheckpointState state, String sha256) {
    }

    /**
     * Reads a checkpoint and checks it against what the reader expects: its layout, names, and the shapes and
     * dtypes of its tensors (the expected state's values, momentum and AdamW archive are not used). Call inside a
     * {@code PointerScope} and a {@code NoGradGuard}: the returned tensors belong to the scope.
     *
     * @param path     the checkpoint
     * @param expected the reader's own state
     * @return the state the file holds
     * @throws IllegalStateException if the file is missing, truncated, not a checkpoint, of another format version,
     *                               holds invalid values, or does not match {@code expected}
     */
    static CheckpointState read(Path path, CheckpointState expected) {
        return readChecked(path, expected).state;
    }

    private static Read readChecked(Path path, CheckpointState expected) {
        if (!Files.isRegularFile(path)) {
            throw new IllegalStateException("checkpoint " + path + " does not exist or is not a file");
        }
        ArchiveFile.Verified verified = ArchiveFile.verify(path);
        InputArchive in = new InputArchive();
        try {
            ArchiveFile.load(in, path, verified.archiveBytes());
        } catch (RuntimeException | IOException e) {
            throw new IllegalStateException("checkpoint " + path + " cannot be read: it is truncated, "
                    + "corrupt or not a libtorch archive (" + Messages.firstLine(e) + ")", e);
        }
        String format = readString(in, "format", path);
        if (!FORMAT.equals(format)) {
            throw new IllegalStateException(path + " is not a Muon checkpoint: format is '" + format
                    + "', expected '" + FORMAT + "'");
        }
        long version = readLong(in, "format_version", path);
        if (version != FORMAT_VERSION && version != UNCHECKSUMMED_VERSION) {
            throw new IllegalStateException("checkpoint " + path + " has format_version " + version
                    + "; this library reads versions " + UNCHECKSUMMED_VERSION + " and " + FORMAT_VERSION + " only");
        }
        if (version == FORMAT_VERSION && !verified.checksummed()) {
            throw new IllegalStateException("checkpoint " + path + " cannot be read: it is truncated or corrupt (it "
                    + "has format_version " + version + " but its checksum trailer is missing); nothing was changed");
        }
        if (version == UNCHECKSUMMED_VERSION) {
            LOG.log(System.Logger.Level.WARNING, "checkpoint " + path + " is format version 1, written without a "
                    + "checksum: corruption in it cannot be detected. Save it again to add one.");
        }
        checkAssignment(readString(in, "assignment", path), expected.layout(), path);
        long step = readLong(in, "step", path);
        if (step < 0) {
            throw new IllegalStateException("checkpoint " + path + " holds step " + step + "; a step count must be "
                    + ">= 0");
        }
        long groups = hasKey(in, "muon_groups") ? readLong(in, "muon_groups", path) : 1;
        if (groups != expected.muonConfigs().size()) {
            throw new IllegalStateException("checkpoint " + path + " holds " + groups + " Muon group(s) but this "
                    + "optimizer has " + expected.muonConfigs().size());
        }
        List<MuonConfig> muonConfigs = new ArrayList<>();
        AdamWConfig adamWConfig = null;
        try {
            for (int g = 0; g < groups; g++) {
                muonConfigs.add(ConfigText.muonConfig(readString(in, g == 0 ? "muon_config" : "muon_config_" + g,
                        path)));
            }
            if (expected.adamWConfig() != null) {
                adamWConfig = ConfigText.adamWConfig(readString(in, "adamw_config", path));
            }
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("checkpoint " + path + " holds an invalid config: "
                    + e.getMessage(), e);
        }

        NorMuonEntries.requireSameSwitch(muonConfigs, expected.muonConfigs(), path);
        List<Tensor> muonValues = new ArrayList<>();
        List<Tensor> momentum = new ArrayList<>();
        List<Tensor> secondMoments = new ArrayList<>();
        for (int i = 0; i < expected.muonParams().size(); i++) {
            Tensor like = expected.muonParams().get(i);
            String name = expected.muonNames().get(i);
            muonValues.add(readTensor(in, "muon_param_" + i, like, name, path));
            Tensor buffer = new Tensor();
            momentum.add(in.try_read("muon_momentum_" + i, buffer)
                    ? checked(buffer, like, name + " (momentum buffer)", path) : null);
            secondMoments.add(NorMuonEntries.read(in, i, like, name, muonConfigs, momentum.get(i) != null, path));
        }
        List<Tensor> adamWValues = new ArrayList<>();
        for (int i = 0; i < expected.adamWParams().size(); i++) {
            adamWValues.add(readTensor(in, "adamw_param_" + i, expected.adamWParams().get(i),
                    expected.adamWNames().get(i), path));
        }
        CheckpointState.AdamWArchive adamW = null;
        if (!expected.adamWParams().isEmpty()) {
            InputArchive archive = new InputArchive();
            if (!in.try_read("adamw", archive)) {
                throw new IllegalStateException("checkpoint " + path + " has no 'adamw' state");
            }
            checkAdamWState(archive, expected, step, path);
            adamW = CheckpointState.AdamWArchive.read(archive);
        }
        ScheduleRecord schedule = null;
        if (hasKey(in, "schedule_initial_lrs")) {
            schedule = readSchedule(in, path, expected.muonConfigs().size() + (expected.adamWConfig() == null ? 0 : 1));
        }
        return new Read(new CheckpointState(step, muonConfigs, adamWConfig, expected.layout(),
                expected.muonNames(), muonValues, momentum, expected.adamWNames(), adamWValues, adamW, schedule,
                secondMoments), verified.sha256());
    }

    /**
     * Checks AdamW's saved moments against the parameters they will belong to (shapes, dtypes), and each
     * parameter's step count against the checkpoint's ({@code 0 <= s <= step}: AdamW counts only the steps in
     * which a parameter had a gradient).
     */
    private static void checkAdamWState(InputArchive adamW, CheckpointState expected, long step, Path path) {
        InputArchive groups = new InputArchive();
        InputArchive state = new InputArchive();
        if (!adamW.try_read("param_groups", groups) || !adamW.try_read("state", state)) {
            throw new IllegalStateException("checkpoint " + path + " holds incomplete AdamW state");
        }
        // The optimizer lists its AdamW parameters group after group (a second group holds those without weight
        // decay), as libtorch stores them.
        List<IValue> keys = new ArrayList<>();
        int groupCount = 0;
        for (InputArchive group = new InputArchive(); groups.try_read("param_groups/" + groupCount, group);
             group = new InputArchive(), groupCount++) {
            for (int i = 0; ; i++) {
                IValue key = new IValue();
                if (!group.try_read("params/" + i, key)) {
                    break;
                }
                keys.add(key);
            }
        }
        if (groupCount == 0) {
            throw new IllegalStateException("checkpoint " + path + " holds incomplete AdamW state");
        }
        Map<Long, AdamWMoments> moments;
        try {
            moments = AdamWMoments.read(state);
        } catch (RuntimeException e) {
            throw new IllegalStateException("checkpoint " + path + " holds unreadable AdamW state: "
                    + Messages.firstLine(e), e);
        }
        List<Tensor> params = expected.adamWParams();
        for (int i = 0; i < params.size(); i++) {
            IValue key = i < keys.size() ? keys.get(i) : null;
            if (key == null || !key.isString()) {
                throw new IllegalStateException("checkpoint " + path + " holds AdamW state for fewer than "
                        + params.size() + " parameters");
            }
            AdamWMoments m = moments.get(Long.parseLong(key.toStringRef().getString()));
            if (m != null) {
                String name = expected.adamWNames().get(i);
                checked(m.expAvg(), params.get(i), name + " (exp_avg)", path);
                checked(m.expAvgSq(), params.get(i), name + " (exp_avg_sq)", path);
                if (m.step() < 0 || m.step() > step) {
                    throw new IllegalStateException("checkpoint " + path + ": '" + name + "' has AdamW step "
                            + m.step() + "; it must be in [0, " + step + "], the checkpoint's step");
                }
            }
        }
    }

    private static void checkAssignment(String saved, String current, Path path) {
        if (saved.equals(current)) {
            return;
        }
        String[] s = saved.split("\n");
        String[] c = current.split("\n");
        if (s.length != c.length) {
            throw new IllegalStateException("checkpoint " + path + " holds " + s.length
                    + " parameters but this optimizer has " + c.length);
        }
        String[] fields = {"optimizer", "name", "shape", "dtype", "tying", "row split"};
        for (int i = 0; i < s.length; i++) {
            String[] sf = s[i].split("\t", -1);
            String[] cf = c[i].split("\t", -1);
            for (int f = 0; f < fields.length; f++) {
                String sv = f < sf.length ? sf[f] : "";
                String cv = f < cf.length ? cf[f] : "";
                if (f == 5) {
                    // A row split is written only where one is set (RowSplit): an absent one reads as none.
                    sv = sv.isEmpty() ? "none" : sv;
                    cv = cv.isEmpty() ? "none" : cv;
                }
                if (!sv.equals(cv)) {
                    throw new IllegalStateException("checkpoint " + path + " does not match this optimizer: "
                            + "parameter " + i + " ('" + cf[1] + "') has " + fields[f] + " " + cv
                            + " but the checkpoint has " + sv);
                }
            }
        }
        throw new IllegalStateException("checkpoint " + path + " does not match this optimizer's assignment");
    }

    private static Tensor readTensor(InputArchive in, String key, Tensor like, String name, Path path) {
        Tensor t = new Tensor();
        if (!in.try_read(key, t)) {
            throw new IllegalStateException("checkpoint " + path + " has no tensor for parameter '" + name + "'");
        }
        return checked(t, like, name, path);
    }

    private static Tensor checked(Tensor t, Tensor like, String what, Path path) {
        if (!Arrays.equals(t.shape(), like.shape())) {
            throw new IllegalStateException("checkpoint " + path + ": '" + what + "' has shape "
                    + Arrays.toString(t.shape()) + " but the parameter has shape " + Arrays.toString(like.shape()));
        }
        if (t.scalar_type().value != like.scalar_type().value) {
            throw new IllegalStateException("checkpoint " + path + ": '" + what + "' has dtype "
                    + t.scalar_type() + " but the parameter has dtype " + like.scalar_type());
        }
        return t;
    }

    /** The schedule record: one base lr per group, each finite and {@code >= 0}, and the schedule's text. */
    private static ScheduleRecord readSchedule(InputArchive in, Path path, int groups) {
        String[] parts = readString(in, "schedule_initial_lrs", path).split(",");
        if (parts.length != groups) {
            throw new IllegalStateException("checkpoint " + path + " holds " + parts.length + " schedule base lrs "
                    + "but this optimizer has " + groups + " groups");
        }
        double[] lrs = new double[groups];
        try {
            for (int g = 0; g < groups; g++) {
                lrs[g] = Double.parseDouble(parts[g]);
            }
            return new ScheduleRecord(lrs, readString(in, "schedule", path));
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("checkpoint " + path + " holds an invalid schedule record: "
                    + e.getMessage(), e);
        }
    }

    private static boolean hasKey(InputArchive in, String key) {
        StringVector keys = in.keys();
        for (long i = 0; i < keys.size(); i++) {
            if (keys.get(i).getString().equals(key)) {
                return true;
            }
        }
        return false;
    }

    private static String readString(InputArchive in, String key, Path path) {
        IValue v = new IValue();
        if (!in.try_read(key, v) || !v.isString()) {
            throw new IllegalStateException(path + " is not a Muon checkpoint: no '" + key + "' entry");
        }
        return v.toStringRef().getString();
    }

    private static long readLong(InputArchive in, String key, Path path) {
        IValue v = new IValue();
        if (!in.try_read(key, v) || !v.isInt()) {
            throw new IllegalStateException(path + " is not a Muon checkpoint: no '" + key + "' entry");
        }
        return v.toInt();
    }
}
