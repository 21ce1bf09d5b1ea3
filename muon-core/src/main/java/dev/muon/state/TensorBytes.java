package dev.muon.state;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.nio.ByteBuffer;
import java.util.function.Consumer;

/**
 * The bytes of tensors in files: the element types muon-core writes and reads, their sizes and names in the two
 * file formats, a tensor's bytes as buffers for writing, and new tensors filled from checked bytes.
 *
 * <p>Files hold little-endian bytes, the order of every platform libtorch's CPU builds run on; {@link TensorKind#requireLittleEndian}
 * refuses the others rather than write or read swapped values.
 *
 * <p>Not API (see this package).
 */
final class TensorBytes {
    /** The largest buffer handed out at once: a Java buffer holds at most 2^31 − 1 bytes. */
    static final int CHUNK = 1 << 30;

    private TensorBytes() {
    }

    /** libtorch's tensors for the byte layer and the fit check. */
    static final TensorIo<Tensor> TORCH = new TensorIo<>() {
        @Override
        public TensorKind kind(Tensor tensor) {
            return kindOf(tensor.scalar_type());
        }

        @Override
        public String dtypeText(Tensor tensor) {
            return tensor.scalar_type().toString();
        }

        @Override
        public long[] shape(Tensor tensor) {
            return tensor.shape();
        }

        @Override
        public void forEachChunk(Tensor tensor, Consumer<ByteBuffer> sink) {
            TensorBytes.forEachChunk(tensor, sink);
        }

        @Override
        public Tensor filled(TensorKind kind, long[] shape, Consumer<ByteBuffer> source) {
            return TensorBytes.filled(kind, shape, source);
        }

        @Override
        public boolean allFinite(Tensor tensor) {
            return tensor.numel() == 0 || tensor.isfinite().all().item_bool();
        }

        @Override
        public boolean anyNegative(Tensor tensor) {
            return tensor.numel() > 0 && tensor.lt(new org.bytedeco.pytorch.Scalar(0.0)).any().item_bool();
        }
    };

    /**
     * libtorch's scalar type of a kind.
     *
     * @param kind the kind
     * @return its scalar type
     */
    static ScalarType scalarType(TensorKind kind) {
        return switch (kind) {
            case FLOAT64 -> ScalarType.Double;
            case FLOAT32 -> ScalarType.Float;
            case FLOAT16 -> ScalarType.Half;
            case BFLOAT16 -> ScalarType.BFloat16;
            case INT64 -> ScalarType.Long;
        };
    }

    /**
     * The kind of a scalar type.
     *
     * @param type libtorch's scalar type
     * @return its kind, or null for a type files do not hold
     */
    static TensorKind kindOf(ScalarType type) {
        for (TensorKind kind : TensorKind.values()) {
            if (scalarType(kind).value == type.value) {
                return kind;
            }
        }
        return null;
    }

    /**
     * Hands a tensor's bytes, in row-major order, to {@code sink} in buffers of at most {@value #CHUNK} bytes; a
     * tensor that is not a contiguous CPU tensor is copied to one first.
     *
     * @param tensor the tensor
     * @param sink   takes each buffer before the next is made
     */
    public static void forEachChunk(Tensor tensor, Consumer<ByteBuffer> sink) {
        Tensor cpu = tensor.device().is_cpu() ? tensor : tensor.cpu();
        Tensor contiguous = cpu.contiguous();
        long bytes = contiguous.numel() * contiguous.element_size();
        if (bytes == 0) {
            return;
        }
        Pointer data = contiguous.data_ptr();
        for (long offset = 0; offset < bytes; offset += CHUNK) {
            long length = Math.min(CHUNK, bytes - offset);
            sink.accept(new BytePointer(data).position(offset).limit(offset + length).asByteBuffer());
        }
    }

    /**
     * A new, contiguous CPU tensor of the given type and shape, its bytes filled by {@code source} buffer by buffer
     * (each of at most {@value #CHUNK} bytes, together exactly the tensor's bytes).
     *
     * @param kind   the element type
     * @param shape  the sizes, checked by the caller
     * @param source fills each buffer completely
     * @return the tensor (it belongs to the caller's scope)
     */
    public static Tensor filled(TensorKind kind, long[] shape, Consumer<ByteBuffer> source) {
        Tensor tensor = torch.empty(shape, new TensorOptions(scalarType(kind)), null);
        long bytes = tensor.numel() * kind.bytes();
        if (bytes == 0) {
            return tensor;
        }
        Pointer data = tensor.data_ptr();
        for (long offset = 0; offset < bytes; offset += CHUNK) {
            long length = Math.min(CHUNK, bytes - offset);
            source.accept(new BytePointer(data).position(offset).limit(offset + length).asByteBuffer());
        }
        return tensor;
    }
}
