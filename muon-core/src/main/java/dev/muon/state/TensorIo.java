package dev.muon.state;

import java.nio.ByteBuffer;
import java.util.function.Consumer;

/**
 * What the byte layer and the fit check need of one module's tensors, so that they serve libtorch's tensors
 * ({@link TensorBytes#TORCH}) and raw bytes ({@link RawTensor#IO}, which muon-djl fills from DJL's arrays) alike,
 * with the same checks and messages. Bindings-free itself.
 *
 * @param <T> the tensor type
 */
interface TensorIo<T> {
    /** The kind of a tensor's elements, or null for a dtype files do not hold. */
    TensorKind kind(T tensor);

    /** The tensor's dtype as messages name it: libtorch's scalar type name ({@code Float}). */
    String dtypeText(T tensor);

    /** The tensor's sizes. */
    long[] shape(T tensor);

    /** Hands over the tensor's bytes, little-endian and row-major, in chunks of at most 1 GiB. */
    void forEachChunk(T tensor, Consumer<ByteBuffer> sink);

    /**
     * A new tensor of a kind and shape (already checked), whose bytes {@code source} fills chunk by chunk: each call
     * gets a buffer to fill completely.
     */
    T filled(TensorKind kind, long[] shape, Consumer<ByteBuffer> source);

    /** Whether every element is finite (integers are). */
    boolean allFinite(T tensor);

    /** Whether some element is below zero. */
    boolean anyNegative(T tensor);
}
