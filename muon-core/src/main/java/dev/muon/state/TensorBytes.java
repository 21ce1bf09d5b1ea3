package dev.muon.state;

import dev.muon.internal.Messages;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The bytes of tensors in files: the element types muon-core writes and reads, their sizes and names in the two
 * file formats, a tensor's bytes as buffers for writing, and new tensors filled from checked bytes.
 *
 * <p>Files hold little-endian bytes, the order of every platform libtorch's CPU builds run on; {@link #requireLittleEndian}
 * refuses the others rather than write or read swapped values.
 *
 * <p>Not API (see this package).
 */
final class TensorBytes {
    /** The largest buffer handed out at once: a Java buffer holds at most 2^31 − 1 bytes. */
    static final int CHUNK = 1 << 30;

    /** An element type a file may hold, with its names in safetensors and in PyTorch's pickles. */
    public enum Kind {
        /** float64. */
        FLOAT64(ScalarType.Double, 8, "F64", "DoubleStorage"),
        /** float32. */
        FLOAT32(ScalarType.Float, 4, "F32", "FloatStorage"),
        /** float16. */
        FLOAT16(ScalarType.Half, 2, "F16", "HalfStorage"),
        /** bfloat16. */
        BFLOAT16(ScalarType.BFloat16, 2, "BF16", "BFloat16Storage"),
        /** int64: PyTorch's step counters before 1.12 and its ids. */
        INT64(ScalarType.Long, 8, "I64", "LongStorage");

        private final ScalarType scalarType;
        private final int bytes;
        private final String safetensorsName;
        private final String storageName;

        Kind(ScalarType scalarType, int bytes, String safetensorsName, String storageName) {
            this.scalarType = scalarType;
            this.bytes = bytes;
            this.safetensorsName = safetensorsName;
            this.storageName = storageName;
        }

        /**
         * libtorch's type.
         *
         * @return the scalar type
         */
        public ScalarType scalarType() {
            return scalarType;
        }

        /**
         * The size of one element.
         *
         * @return bytes
         */
        public int bytes() {
            return bytes;
        }

        /**
         * The name in a safetensors header.
         *
         * @return e.g. {@code "F32"}
         */
        public String safetensorsName() {
            return safetensorsName;
        }

        /**
         * The class name of the storage in a PyTorch pickle ({@code torch.FloatStorage}).
         *
         * @return e.g. {@code "FloatStorage"}
         */
        public String storageName() {
            return storageName;
        }

        private static final Map<String, Kind> BY_SAFETENSORS = Map.of("F64", FLOAT64, "F32", FLOAT32,
                "F16", FLOAT16, "BF16", BFLOAT16, "I64", INT64);
        private static final Map<String, Kind> BY_STORAGE = Map.of("DoubleStorage", FLOAT64,
                "FloatStorage", FLOAT32, "HalfStorage", FLOAT16, "BFloat16Storage", BFLOAT16, "LongStorage", INT64);

        /**
         * The kind of a safetensors dtype name.
         *
         * @param name the name
         * @return the kind, or null if it is not one muon-core reads
         */
        public static Kind ofSafetensorsName(String name) {
            return BY_SAFETENSORS.get(name);
        }

        /**
         * The kind of a PyTorch storage class name.
         *
         * @param name the class name without its module
         * @return the kind, or null if it is not one muon-core reads
         */
        public static Kind ofStorageName(String name) {
            return BY_STORAGE.get(name);
        }

        /**
         * The kind of a libtorch scalar type.
         *
         * @param type the type
         * @return the kind, or null if files of muon-core cannot hold it
         */
        public static Kind of(ScalarType type) {
            for (Kind kind : values()) {
                if (kind.scalarType.value == type.value) {
                    return kind;
                }
            }
            return null;
        }

        /** The names of every kind in one format, for messages. */
        static String safetensorsNames() {
            return "[F64, F32, F16, BF16, I64]";
        }
    }

    private TensorBytes() {
    }

    /**
     * Refuses a big-endian platform: files hold little-endian bytes and tensors are copied as they are in memory.
     *
     * @throws UnsupportedOperationException on a big-endian platform
     */
    public static void requireLittleEndian() {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException("muon-core's files hold little-endian bytes, and this platform "
                    + "is big-endian");
        }
    }

    /**
     * The number of elements of a shape, checked, and checked to be a shape libtorch can make: its contiguous
     * strides, products of the sizes with 0 counting as 1, must fit in a long too. An empty shape such as
     * {@code [0, 2^62, 2^62]} has 0 elements, and libtorch throws ("Stride calculation overflowed") when asked for
     * it.
     *
     * @param shape the sizes
     * @param what  how to name the tensor in a message
     * @return their product
     * @throws FormatException if a size is negative or the product, or the product of the sizes with 0 read as 1,
     *                         does not fit in a long
     */
    public static long elementCount(long[] shape, String what) {
        long count = 1;
        long strides = 1;
        for (long size : shape) {
            if (size < 0) {
                throw new FormatException(what, "has a negative size in its shape " + Messages.shortened(shape));
            }
            try {
                count = Math.multiplyExact(count, size);
            } catch (ArithmeticException e) {
                throw new FormatException(what, "has a shape whose element count overflows a long: "
                        + Messages.shortened(shape));
            }
            try {
                strides = Math.multiplyExact(strides, Math.max(size, 1));
            } catch (ArithmeticException e) {
                throw new FormatException(what, "has a shape whose strides overflow a long (the product of its "
                        + "sizes, 0 read as 1): " + Messages.shortened(shape));
            }
        }
        return count;
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
    public static Tensor filled(Kind kind, long[] shape, Consumer<ByteBuffer> source) {
        Tensor tensor = torch.empty(shape, new TensorOptions(kind.scalarType()), null);
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
