package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.AdamWConfig;
import dev.muon.BufferSpec;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.UpdateRecipe;
import dev.muon.state.CheckpointBytes;
import dev.muon.state.CheckpointDocument;
import dev.muon.state.RawTensor;
import dev.muon.state.StateMismatchException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The optimizers' state in muon-core's checkpoint format, through its bindings-free side ({@link CheckpointBytes},
 * {@link CheckpointDocument}, {@link RawTensor}, the fit in {@link CheckpointBytes#readFor}): the same file, the same weights-only reading
 * and checksum, the same fit check listing every difference. Both optimizers of this package save and load through
 * it; what each holds comes in as {@link Named} parameters and their state.
 *
 * <p>Saved per parameter: its value, and the state of one device's copy (every copy moves by the same update, so
 * they are equal): Muon's declared buffers ({@link UpdateRecipe#buffers()}: the momentum, NorMuon's second moment),
 * AdamW's moments and its update count; and the step count, which is where a DJL tracker's lr continues.
 */
final class DjlCheckpoint {
    private static final NDIndex ALL = new NDIndex("...");

    private DjlCheckpoint() {
    }

    /**
     * One named parameter as the state describes it.
     *
     * @param name    DJL's name
     * @param entry   the parameter
     * @param kind    its optimizer
     * @param aliasOf the first name of a shared parameter when this is a later one, else null
     */
    record Named(String name, ModelParameters.Entry entry, OptimizerKind kind, String aliasOf) {
    }

    /** What a parameter's copy holds: Muon's buffers by key, or AdamW's moments and count. */
    record Held(Map<String, NDArray> buffers, NDArray expAvg, NDArray expAvgSq, long adamWStep) {
    }

    /**
     * The file's dtype of a DJL dtype.
     *
     * @param dtype the dtype
     * @return libtorch's scalar type name ({@code Float})
     * @throws IllegalArgumentException for a dtype checkpoints do not hold
     */
    static String documentDtype(DataType dtype) {
        return CheckpointDocument.documentDtype(dtype.toString());
    }

    /**
     * The document of an optimizer's state.
     *
     * @param step        the steps applied
     * @param muon        the Muon group's config
     * @param adamW       the AdamW group's config, or null for a {@link Muon}
     * @param named       every named parameter, in the optimizer's order
     * @param held        each parameter's saved state, or null for none
     * @return the document
     */
    static CheckpointDocument document(long step, MuonConfig muon, AdamWConfig adamW, List<Named> named,
                                       Map<String, Held> held) {
        List<CheckpointDocument.Parameter> parameters = new ArrayList<>();
        for (Named n : named) {
            NDArray array = n.entry().parameter().getArray();
            long[] shape = array.getShape().getShape();
            String dtype = documentDtype(array.getDataType());
            Held h = held.get(n.name());
            if (n.aliasOf() != null) {
                parameters.add(new CheckpointDocument.Parameter(n.name(), OptimizerKind.ADAMW, 0, shape, dtype,
                        n.aliasOf(), null, null));
            } else if (n.kind() == OptimizerKind.MUON) {
                parameters.add(new CheckpointDocument.Parameter(n.name(), OptimizerKind.MUON, 0, shape, dtype, null,
                        null, null));
            } else {
                parameters.add(new CheckpointDocument.Parameter(n.name(), OptimizerKind.ADAMW, 0, shape, dtype, null,
                        null, h == null || h.expAvg() == null ? null : h.adamWStep()));
            }
        }
        return new CheckpointDocument(step, List.of(muon), adamW, null, parameters);
    }

    /**
     * Writes an optimizer's state.
     *
     * @param path     the file, replaced atomically
     * @param document its document ({@link #document})
     * @param named    every named parameter
     * @param held     each parameter's state by name
     * @throws java.io.UncheckedIOException if the file cannot be written; it is then unchanged
     */
    static void write(Path path, CheckpointDocument document, List<Named> named, Map<String, Held> held) {
        CheckpointBytes.Tensors tensors = new CheckpointBytes.Tensors();
        for (Named n : named) {
            if (n.aliasOf() != null) {
                continue;
            }
            tensors.value(n.name(), raw(n.entry().parameter().getArray()));
            Held h = held.get(n.name());
            if (h == null) {
                continue;
            }
            h.buffers().forEach((key, buffer) -> tensors.buffer(key, n.name(), raw(buffer)));
            if (h.expAvg() != null) {
                tensors.moments(n.name(), raw(h.expAvg()), raw(h.expAvgSq()));
            }
        }
        CheckpointBytes.write(path, document, tensors.byName());
    }

    /**
     * Reads a checkpoint for an optimizer, refusing one that does not fit it before anything changes: the fit check
     * of the described state before any tensor is read, then of the tensors; and a step other than
     * {@code optBeginNumUpdate}'s, when that was set.
     *
     * @param path  the file
     * @param mine  the optimizer's own document
     * @param begin {@code optBeginNumUpdate}, 0 for none
     * @return what the file holds
     * @throws dev.muon.state.StateFileException if the file is missing, truncated, corrupt or malformed
     * @throws StateMismatchException            listing every difference
     */
    static CheckpointBytes.Contents read(Path path, CheckpointDocument mine, long begin) {
        return CheckpointBytes.readFor(path, mine, candidate -> begin != 0 && begin != candidate.step()
                ? List.of(new StateMismatchException.Difference("step", StateMismatchException.Field.STEP_COUNT,
                        begin + " (optBeginNumUpdate)",
                        String.valueOf(candidate.step()), "a checkpoint carries its step: build without "
                        + "optBeginNumUpdate, or with the checkpoint's"))
                : List.of());
    }

    /**
     * Turns a read checkpoint's tensors into arrays on each parameter's device, all of them before anything changes;
     * on failure, those made so far are freed.
     *
     * @param read    what the file holds
     * @param named   every named parameter
     * @param buffers the Muon buffer keys this optimizer keeps
     * @return the arrays: values, Muon buffers by key, AdamW moments, by name, and AdamW counts
     */
    static Loaded arrays(CheckpointBytes.Contents read, List<Named> named, List<BufferSpec> buffers) {
        Loaded out = new Loaded();
        try {
            for (Named n : named) {
                if (n.aliasOf() != null) {
                    continue;
                }
                NDArray weight = n.entry().parameter().getArray();
                NDManager manager = weight.getManager();
                RawTensor value = read.value(n.name());
                if (value != null) {
                    out.values.put(n, out.keep(array(value, manager, weight.getDevice())));
                }
                Map<String, NDArray> held = new LinkedHashMap<>();
                for (BufferSpec b : buffers) {
                    RawTensor t = read.buffer(b, n.name());
                    if (t != null) {
                        held.put(b.key(), out.keep(array(t, manager, weight.getDevice())));
                    }
                }
                if (!held.isEmpty()) {
                    out.buffers.put(n.entry().id(), held);
                }
                RawTensor[] moments = read.moments(n.name());
                if (moments != null) {
                    out.moments.put(n.entry().id(), new NDArray[] {
                            out.keep(array(moments[0], manager, weight.getDevice())),
                            out.keep(array(moments[1], manager, weight.getDevice()))});
                    long step = read.document().parameter(n.name()).map(CheckpointDocument.Parameter::adamWStep)
                            .orElseThrow();
                    out.adamWSteps.put(n.entry().id(), step);
                }
            }
            return out;
        } catch (RuntimeException e) {
            out.made.forEach(NDArray::close);
            throw e;
        }
    }

    /** A checkpoint's arrays, ready to be taken. */
    static final class Loaded {
        final Map<Named, NDArray> values = new LinkedHashMap<>();
        final Map<String, Map<String, NDArray>> buffers = new HashMap<>();
        final Map<String, NDArray[]> moments = new HashMap<>();
        final Map<String, Long> adamWSteps = new HashMap<>();
        private final List<NDArray> made = new ArrayList<>();

        private NDArray keep(NDArray a) {
            made.add(a);
            return a;
        }

        /**
         * Writes the checkpoint's values into the parameters and every device's copy of them, exactly (an indexed
         * copy, bit for bit), then frees the arrays that held them.
         *
         * @param copies the parameter copies DJL handed over so far
         */
        void putValues(Map<ParameterKey, NDArray> copies) {
            for (Map.Entry<Named, NDArray> v : values.entrySet()) {
                NDArray weight = v.getKey().entry().parameter().getArray();
                weight.set(ALL, v.getValue());
                String id = v.getKey().entry().id();
                copies.forEach((key, copy) -> {
                    if (key.parameterId().equals(id) && copy != weight) {
                        try (NDArray there = v.getValue().toDevice(copy.getDevice(), true)) {
                            copy.set(ALL, there);
                        }
                    }
                });
                v.getValue().close();
            }
        }
    }

    /**
     * The bytes of an array, as the file holds them.
     *
     * @param array a CPU or GPU array
     * @return a copy of its bytes
     */
    static RawTensor raw(NDArray array) {
        ByteBuffer bytes = array.toByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        return RawTensor.of(array.getDataType().toString(), array.getShape().getShape(), bytes);
    }

    /**
     * A new array of a raw tensor's values.
     *
     * @param t       the tensor
     * @param manager the manager that owns the array
     * @param device  its device
     * @return the array
     */
    static NDArray array(RawTensor t, NDManager manager, Device device) {
        Objects.requireNonNull(t, "tensor must not be null");
        DataType dtype = DataType.valueOf(t.dtype().toUpperCase(java.util.Locale.ROOT));
        ByteBuffer direct = ByteBuffer.allocateDirect(t.data().remaining()).order(ByteOrder.nativeOrder());
        direct.put(t.data()).flip();
        NDArray cpu = manager.create(direct, new Shape(t.shape()), dtype);
        if (cpu.getDevice().equals(device)) {
            return cpu;
        }
        try (cpu) {
            return cpu.toDevice(device, true);
        }
    }
}
