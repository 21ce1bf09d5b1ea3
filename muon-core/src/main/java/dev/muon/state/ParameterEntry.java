package dev.muon.state;

import dev.muon.internal.TorchNatives;

import org.bytedeco.pytorch.Tensor;

import java.util.Objects;

/**
 * One named parameter of an {@link OptimizerState}: its {@link ParameterSpec} and the tensors kept for it, each
 * null where there is none: the parameter's value (checkpoints hold it, PyTorch's optimizer state does not), Muon's
 * momentum buffer (before the first update: none), NorMuon's per-row second moment, and AdamW's moments.
 *
 * <p>Build one with {@link #of(ParameterSpec)} and the {@code with...} copies.
 *
 * @param spec         what the parameter is
 * @param value        its value, or null
 * @param momentum     Muon's momentum buffer, or null
 * @param secondMoment NorMuon's second moment, or null
 * @param adamW        AdamW's moments, or null
 */
public record ParameterEntry(ParameterSpec spec, Tensor value, Tensor momentum, Tensor secondMoment,
                             AdamWMoments adamW) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates.
     *
     * @throws NullPointerException     if the spec is null
     * @throws IllegalArgumentException if a tied name holds a tensor, or a parameter holds the state of the other
     *                                  optimizer
     */
    public ParameterEntry {
        Objects.requireNonNull(spec, "spec must not be null");
        if (spec.isTied() && (value != null || momentum != null || secondMoment != null || adamW != null)) {
            throw new IllegalArgumentException("'" + spec.name() + "' is tied to '" + spec.tiedTo() + "' and holds "
                    + "no tensors of its own");
        }
        boolean muon = spec.optimizer() == dev.muon.OptimizerKind.MUON;
        if (muon && adamW != null) {
            throw new IllegalArgumentException("'" + spec.name() + "' is on Muon and cannot hold AdamW moments");
        }
        if (!muon && (momentum != null || secondMoment != null)) {
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
        return new ParameterEntry(spec, null, null, null, null);
    }

    /**
     * This entry with a value.
     *
     * @param tensor the parameter's value, or null
     * @return a copy
     */
    public ParameterEntry withValue(Tensor tensor) {
        return new ParameterEntry(spec, tensor, momentum, secondMoment, adamW);
    }

    /**
     * This entry with Muon's momentum buffer.
     *
     * @param tensor the buffer, or null
     * @return a copy
     */
    public ParameterEntry withMomentum(Tensor tensor) {
        return new ParameterEntry(spec, value, tensor, secondMoment, adamW);
    }

    /**
     * This entry with NorMuon's second moment.
     *
     * @param tensor the second moment, or null
     * @return a copy
     */
    public ParameterEntry withSecondMoment(Tensor tensor) {
        return new ParameterEntry(spec, value, momentum, tensor, adamW);
    }

    /**
     * This entry with AdamW's moments.
     *
     * @param moments the moments, or null
     * @return a copy
     */
    public ParameterEntry withAdamW(AdamWMoments moments) {
        return new ParameterEntry(spec, value, momentum, secondMoment, moments);
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
