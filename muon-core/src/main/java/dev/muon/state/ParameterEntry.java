package dev.muon.state;

import dev.muon.internal.TorchNatives;

import org.bytedeco.pytorch.Tensor;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One named parameter of an {@link OptimizerState}: its {@link ParameterSpec} and the tensors kept for it, each
 * absent where there is none: the parameter's value (checkpoints hold it, PyTorch's optimizer state does not), the
 * Muon state buffers its update declares ({@link dev.muon.BufferSpec}, by key: the momentum buffer, NorMuon's second moment;
 * none before its first update), and AdamW's moments.
 *
 * <p>Build one with {@link #of(ParameterSpec)} and the {@code with...} copies.
 *
 * @param spec    what the parameter is
 * @param value   its value, or null
 * @param buffers its Muon state buffers by {@link dev.muon.BufferSpec#key()}, in declaration order; empty for none
 * @param adamW   AdamW's moments, or null
 */
public record ParameterEntry(ParameterSpec spec, Tensor value, Map<String, Tensor> buffers, AdamWMoments adamW) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates and copies the buffers.
     *
     * @throws NullPointerException     if the spec is null, or a buffer's key or tensor
     * @throws IllegalArgumentException if a tied name holds a tensor, or a parameter holds the state of the other
     *                                  optimizer
     */
    public ParameterEntry {
        Objects.requireNonNull(spec, "spec must not be null");
        buffers = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(buffers,
                "buffers must not be null")));
        buffers.forEach((key, tensor) -> {
            Objects.requireNonNull(key, "a buffer's key must not be null");
            Objects.requireNonNull(tensor, "buffer '" + key + "' must not be null");
        });
        if (spec.isTied() && (value != null || !buffers.isEmpty() || adamW != null)) {
            throw new IllegalArgumentException("'" + spec.name() + "' is tied to '" + spec.tiedTo() + "' and holds "
                    + "no tensors of its own");
        }
        boolean muon = spec.optimizer() == dev.muon.OptimizerKind.MUON;
        if (muon && adamW != null) {
            throw new IllegalArgumentException("'" + spec.name() + "' is on Muon and cannot hold AdamW moments");
        }
        if (!muon && !buffers.isEmpty()) {
            throw new IllegalArgumentException("'" + spec.name() + "' is on AdamW and cannot hold Muon buffers");
        }
    }

    /**
     * An entry with no tensors.
     *
     * @param spec what the parameter is
     * @return the entry
     */
    public static ParameterEntry of(ParameterSpec spec) {
        return new ParameterEntry(spec, null, Map.of(), null);
    }

    /**
     * This entry with a value.
     *
     * @param tensor the parameter's value, or null
     * @return a copy
     */
    public ParameterEntry withValue(Tensor tensor) {
        return new ParameterEntry(spec, tensor, buffers, adamW);
    }

    /**
     * This entry with a Muon state buffer set, or removed.
     *
     * @param key    the buffer's {@link dev.muon.BufferSpec#key()}
     * @param tensor the buffer, or null for none
     * @return a copy
     */
    public ParameterEntry withBuffer(String key, Tensor tensor) {
        Map<String, Tensor> copy = new LinkedHashMap<>(buffers);
        if (tensor == null) {
            copy.remove(key);
        } else {
            copy.put(key, tensor);
        }
        return new ParameterEntry(spec, value, copy, adamW);
    }

    /**
     * A Muon state buffer.
     *
     * @param key the buffer's {@link dev.muon.BufferSpec#key()}
     * @return the buffer, or null when the entry holds none
     */
    public Tensor buffer(String key) {
        return buffers.get(key);
    }

    /**
     * This entry with AdamW's moments.
     *
     * @param moments the moments, or null
     * @return a copy
     */
    public ParameterEntry withAdamW(AdamWMoments moments) {
        return new ParameterEntry(spec, value, buffers, moments);
    }

    /**
     * The parameter's name.
     *
     * @return {@code spec().name()}
     */
    public String name() {
        return spec.name();
    }
}
