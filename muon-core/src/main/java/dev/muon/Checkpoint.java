package dev.muon;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.OutputArchive;
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
 * The checkpoint format of {@link MuonAdamW}: one libtorch archive (the zip format of {@code torch::save}) with
 * <pre>
 *   format          "dev.muon.checkpoint"
 *   format_version  1
 *   step            the step count
 *   assignment      one line per named parameter: kind, name, shape, dtype, the name it is tied to
 *   muon_config, adamw_config   the configs as key=value text ({@link ConfigText})
 *   muon_param_i, muon_momentum_i, adamw_param_i   the parameters and Muon's buffers, in table order
 *   adamw           libtorch AdamW's own archive ({@code AdamW::save}): moments, step counts, options
 * </pre>
 * A save writes a temporary file in the same directory, forces it to disk and renames it over the target, so the
 * target is always either the old file or the new one. A load reads and checks everything into fresh objects
 * before it changes the optimizer. See {@code docs/checkpoints.md}.
 */
final class Checkpoint {
    static final String FORMAT = "dev.muon.checkpoint";
    static final long FORMAT_VERSION = 1;

    private Checkpoint() {
    }

    static void save(MuonAdamW optimizer, Path path) {
        List<Tensor> momentum = new ArrayList<>();
        for (Tensor p : optimizer.muonParams()) {
            momentum.add(optimizer.muon().momentumBuffer(p).orElse(null));
        }
        save(optimizer, path, momentum);
    }

    /**
     * Saves with the given Muon momentum, aligned with {@code optimizer.muonParams()} (null where a parameter has
     * none yet): a distributed save passes the buffers it gathered from their owners.
     */
    static void save(MuonAdamW optimizer, Path path, List<Tensor> momentum) {
        Path target = path.toAbsolutePath();
        Path dir = target.getParent();
        Path tmp = dir.resolve("." + target.getFileName() + ".tmp-" + ProcessHandle.current().pid() + "-"
                + System.nanoTime());
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            OutputArchive out = new OutputArchive();
            out.write("format", new IValue(FORMAT));
            out.write("format_version", new IValue(FORMAT_VERSION));
            out.write("step", new IValue(optimizer.stepCount()));
            out.write("assignment", new IValue(assignmentText(optimizer)));
            out.write("muon_config", new IValue(ConfigText.of(optimizer.muonConfig())));
            out.write("adamw_config", new IValue(ConfigText.of(optimizer.adamWConfig())));
            List<Tensor> muonParams = optimizer.muonParams();
            for (int i = 0; i < muonParams.size(); i++) {
                out.write("muon_param_" + i, muonParams.get(i).detach());
                if (momentum.get(i) != null) {
                    out.write("muon_momentum_" + i, momentum.get(i));
                }
            }
            List<Tensor> adamWParams = optimizer.adamWParams();
            for (int i = 0; i < adamWParams.size(); i++) {
                out.write("adamw_param_" + i, adamWParams.get(i).detach());
            }
            if (optimizer.adamW() != null) {
                OutputArchive adamW = new OutputArchive();
                optimizer.adamW().save(adamW);
                out.write("adamw", adamW);
            }
            try {
                out.save_to(tmp.toString());
            } catch (RuntimeException e) {
                throw new UncheckedIOException(new IOException("cannot write checkpoint " + tmp + ": "
                        + firstLine(e), e));
            }
            try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                channel.force(true);
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

    /** Makes the rename durable; not every platform can open a directory, and then the rename is still atomic. */
    private static void forceDirectory(Path dir) {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // Windows cannot open directories; the rename itself is still atomic there
        }
    }

    static void load(MuonAdamW optimizer, Path path) {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            read(optimizer, path).apply();
        }
    }

    /**
     * A checkpoint read and checked against an optimizer, ready to be applied: fresh optimizer state and the
     * parameter values. Nothing in the optimizer has changed yet. Valid inside the caller's scope only.
     */
    static final class Restore {
        private final MuonAdamW optimizer;
        private final List<Tensor> muonValues;
        private final List<Tensor> adamWValues;
        private final Muon muon;
        private final MuonConfig muonConfig;
        private final AdamW adamW;
        private final AdamWConfig adamWConfig;
        private final long step;

        private Restore(MuonAdamW optimizer, List<Tensor> muonValues, List<Tensor> adamWValues, Muon muon,
                        MuonConfig muonConfig, AdamW adamW, AdamWConfig adamWConfig, long step) {
            this.optimizer = optimizer;
            this.muonValues = muonValues;
            this.adamWValues = adamWValues;
            this.muon = muon;
            this.muonConfig = muonConfig;
            this.adamW = adamW;
            this.adamWConfig = adamWConfig;
            this.step = step;
        }

        /** Copies the values into the parameters and swaps in the state; cannot fail. Call inside a NoGradGuard. */
        void apply() {
            List<Tensor> muonParams = optimizer.muonParams();
            for (int i = 0; i < muonParams.size(); i++) {
                muonParams.get(i).copy_(muonValues.get(i));
            }
            List<Tensor> adamWParams = optimizer.adamWParams();
            for (int i = 0; i < adamWParams.size(); i++) {
                adamWParams.get(i).copy_(adamWValues.get(i));
            }
            optimizer.restore(muon, muonConfig, adamW, adamWConfig, step);
        }
    }

    /** Reads and checks everything; the optimizer is untouched. Call inside a PointerScope and NoGradGuard. */
    static Restore read(MuonAdamW optimizer, Path path) {
        if (!Files.isRegularFile(path)) {
            throw new IllegalStateException("checkpoint " + path + " does not exist or is not a file");
        }
        InputArchive in = new InputArchive();
        try {
            in.load_from(path.toString());
        } catch (RuntimeException e) {
            throw new IllegalStateException("checkpoint " + path + " cannot be read: it is truncated, "
                    + "corrupt or not a libtorch archive (" + firstLine(e) + ")", e);
        }
        String format = readString(in, "format", path);
        if (!FORMAT.equals(format)) {
            throw new IllegalStateException(path + " is not a Muon checkpoint: format is '" + format
                    + "', expected '" + FORMAT + "'");
        }
        long version = readLong(in, "format_version", path);
        if (version != FORMAT_VERSION) {
            throw new IllegalStateException("checkpoint " + path + " has format_version " + version
                    + "; this library reads version " + FORMAT_VERSION + " only");
        }
        checkAssignment(readString(in, "assignment", path), assignmentText(optimizer), path);
        long step = readLong(in, "step", path);
        MuonConfig muonConfig;
        AdamWConfig adamWConfig;
        try {
            muonConfig = ConfigText.muonConfig(readString(in, "muon_config", path));
            adamWConfig = ConfigText.adamWConfig(readString(in, "adamw_config", path));
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("checkpoint " + path + " holds an invalid config: "
                    + e.getMessage(), e);
        }

        List<Tensor> muonParams = optimizer.muonParams();
        List<Tensor> muonValues = new ArrayList<>();
        List<Tensor> momentum = new ArrayList<>();
        for (int i = 0; i < muonParams.size(); i++) {
            String name = optimizer.muonNames().get(i);
            muonValues.add(readTensor(in, "muon_param_" + i, muonParams.get(i), name, path));
            Tensor buffer = new Tensor();
            momentum.add(in.try_read("muon_momentum_" + i, buffer)
                    ? checked(buffer, muonParams.get(i), name + " (momentum buffer)", path) : null);
        }
        List<Tensor> adamWParams = optimizer.adamWParams();
        List<Tensor> adamWValues = new ArrayList<>();
        for (int i = 0; i < adamWParams.size(); i++) {
            adamWValues.add(readTensor(in, "adamw_param_" + i, adamWParams.get(i),
                    optimizer.adamWNames().get(i), path));
        }

        Muon muon = optimizer.freshMuon(muonConfig);
        for (int i = 0; i < muonParams.size(); i++) {
            // Distributed, each rank keeps the momentum of the parameters it owns under its current plan.
            if (momentum.get(i) != null && (muon == null || muon.owns(muonParams.get(i)))) {
                muon.momentumBufferForRestore(muonParams.get(i)).copy_(momentum.get(i));
            }
        }
        AdamW adamW = optimizer.freshAdamW(adamWConfig);
        if (adamW != null) {
            InputArchive adamWArchive = new InputArchive();
            if (!in.try_read("adamw", adamWArchive)) {
                throw new IllegalStateException("checkpoint " + path + " has no 'adamw' state");
            }
            checkAdamWState(adamWArchive, optimizer, path);
            try {
                adamW.load(adamWArchive);
            } catch (RuntimeException e) {
                throw new IllegalStateException("checkpoint " + path + " holds AdamW state that libtorch "
                        + "cannot load: " + firstLine(e), e);
            }
        }

        return new Restore(optimizer, muonValues, adamWValues, muon, muonConfig, adamW, adamWConfig, step);
    }

    /** Checks the shapes and dtypes of AdamW's saved moments against the parameters they will belong to. */
    private static void checkAdamWState(InputArchive adamW, MuonAdamW optimizer, Path path) {
        InputArchive groups = new InputArchive();
        InputArchive group = new InputArchive();
        InputArchive state = new InputArchive();
        if (!adamW.try_read("param_groups", groups) || !groups.try_read("param_groups/0", group)
                || !adamW.try_read("state", state)) {
            throw new IllegalStateException("checkpoint " + path + " holds incomplete AdamW state");
        }
        Map<Long, AdamWMoments> moments;
        try {
            moments = AdamWMoments.read(state);
        } catch (RuntimeException e) {
            throw new IllegalStateException("checkpoint " + path + " holds unreadable AdamW state: "
                    + firstLine(e), e);
        }
        List<Tensor> params = optimizer.adamWParams();
        for (int i = 0; i < params.size(); i++) {
            IValue key = new IValue();
            if (!group.try_read("params/" + i, key) || !key.isString()) {
                throw new IllegalStateException("checkpoint " + path + " holds AdamW state for fewer than "
                        + params.size() + " parameters");
            }
            AdamWMoments m = moments.get(Long.parseLong(key.toStringRef().getString()));
            if (m != null) {
                String name = optimizer.adamWNames().get(i);
                checked(m.expAvg(), params.get(i), name + " (exp_avg)", path);
                checked(m.expAvgSq(), params.get(i), name + " (exp_avg_sq)", path);
            }
        }
    }

    /** One line per named parameter: kind, name, shape, dtype and the name a tied alias points to. */
    static String assignmentText(MuonAdamW optimizer) {
        StringBuilder text = new StringBuilder();
        for (Assignment.Row row : optimizer.assignment().rows()) {
            text.append(row.optimizer()).append('\t').append(row.name()).append('\t')
                    .append(Arrays.toString(row.shape())).append('\t').append(row.dtype()).append('\t')
                    .append(row.reason().startsWith("tied to ") ? row.reason() : "").append('\n');
        }
        return text.toString();
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
        String[] fields = {"optimizer", "name", "shape", "dtype", "tying"};
        for (int i = 0; i < s.length; i++) {
            String[] sf = s[i].split("\t", -1);
            String[] cf = c[i].split("\t", -1);
            for (int f = 0; f < fields.length; f++) {
                String sv = f < sf.length ? sf[f] : "";
                String cv = f < cf.length ? cf[f] : "";
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

    private static String firstLine(RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl);
    }
}
