package dev.muon.state;

import dev.muon.internal.TorchNatives;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.DoublePredicate;

/**
 * A tensor as muon-core's files hold it, without libtorch: its dtype's name, its shape, and its elements'
 * bytes, little-endian and row-major. A module that has no libtorch bindings (muon-djl) writes and reads checkpoints
 * through it ({@link CheckpointBytes}) and turns it into its own arrays; a read one is always new memory, filled from
 * checked bytes.
 *
 * <pre>{@code
 * RawTensor t = RawTensor.of("float32", new long[] {2, 2}, buffer);   // buffer: 16 bytes
 * }</pre>
 *
 * @param dtype the dtype's name: {@code float64}, {@code float32}, {@code float16}, {@code bfloat16} or {@code int64}
 * @param shape the sizes
 * @param data  exactly the elements' bytes, little-endian, from position 0 (a read-only view)
 */
public record RawTensor(String dtype, long[] shape, ByteBuffer data) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The most bytes one raw tensor holds: a Java buffer's. */
    public static final long MAX_BYTES = Integer.MAX_VALUE - 8;

    /**
     * Checks the dtype, the shape and the byte count, and keeps a read-only little-endian view of the bytes.
     *
     * @throws IllegalArgumentException for a dtype files do not hold, a negative size, or a byte count other than
     *                                  the shape's
     * @throws NullPointerException     if an argument is null
     */
    public RawTensor {
        Objects.requireNonNull(dtype, "dtype must not be null");
        Objects.requireNonNull(data, "data must not be null");
        Objects.requireNonNull(shape, "shape must not be null");
        TensorKind kind = TensorKind.ofDtypeName(dtype);
        if (kind == null) {
            throw new IllegalArgumentException("dtype must be one of float64, float32, float16, bfloat16, int64, got '"
                    + dtype + "'");
        }
        shape = shape.clone();
        long elements = 1;
        long bytes;
        try {
            for (long size : shape) {
                if (size < 0) {
                    throw new IllegalArgumentException("shape sizes must be >= 0, got " + Arrays.toString(shape));
                }
                elements = Math.multiplyExact(elements, size);
            }
            bytes = Math.multiplyExact(elements, kind.bytes());
        } catch (ArithmeticException overflow) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " of " + dtype + " must have a byte "
                    + "count that fits a long, got one that overflows it");
        }
        ByteBuffer view = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (view.remaining() != bytes) {
            throw new IllegalArgumentException("a " + dtype + " tensor of shape " + Arrays.toString(shape) + " has "
                    + bytes + " bytes, got " + view.remaining());
        }
        data = view.slice().order(ByteOrder.LITTLE_ENDIAN).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * A raw tensor.
     *
     * @param dtype the dtype's name
     * @param shape the sizes
     * @param data  the bytes, from the buffer's position to its limit
     * @return the tensor
     * @throws IllegalArgumentException as the constructor
     */
    public static RawTensor of(String dtype, long[] shape, ByteBuffer data) {
        return new RawTensor(dtype, shape, data);
    }

    /**
     * The sizes.
     *
     * @return a copy
     */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The bytes, from position 0.
     *
     * @return a new read-only little-endian view
     */
    @Override
    public ByteBuffer data() {
        return data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RawTensor t && dtype.equals(t.dtype) && Arrays.equals(shape, t.shape)
                && data.equals(t.data);
    }

    @Override
    public int hashCode() {
        return Objects.hash(dtype, Arrays.hashCode(shape), data);
    }

    @Override
    public String toString() {
        return "RawTensor[" + dtype + " " + Arrays.toString(shape) + "]";
    }

    /** Raw tensors for the byte layer and the fit check. */
    static final TensorIo<RawTensor> IO = new TensorIo<>() {
        @Override
        public TensorKind kind(RawTensor tensor) {
            return TensorKind.ofDtypeName(tensor.dtype);
        }

        @Override
        public String dtypeText(RawTensor tensor) {
            return TensorKind.documentNameOf(tensor.dtype);
        }

        @Override
        public long[] shape(RawTensor tensor) {
            return tensor.shape.clone();
        }

        @Override
        public void forEachChunk(RawTensor tensor, Consumer<ByteBuffer> sink) {
            ByteBuffer all = tensor.data();
            for (int at = 0; at < all.limit(); at += CHUNK) {
                int length = Math.min(CHUNK, all.limit() - at);
                sink.accept(all.duplicate().position(at).limit(at + length).slice());
            }
        }

        @Override
        public RawTensor filled(TensorKind kind, long[] shape, Consumer<ByteBuffer> source) {
            long bytes = TensorKind.elementCount(shape, "a tensor") * kind.bytes();
            if (bytes > MAX_BYTES) {
                throw new FormatException("a tensor of shape " + Arrays.toString(shape), "has " + bytes
                        + " bytes; a raw tensor (muon-djl's) holds at most " + MAX_BYTES);
            }
            ByteBuffer buffer = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
            for (int at = 0; at < bytes; at += CHUNK) {
                int length = (int) Math.min(CHUNK, bytes - at);
                source.accept(buffer.duplicate().position(at).limit(at + length).slice());
            }
            return new RawTensor(kind.dtypeName(), shape, buffer);
        }

        @Override
        public boolean allFinite(RawTensor tensor) {
            ByteBuffer b = tensor.data();
            TensorKind kind = TensorKind.ofDtypeName(tensor.dtype);
            return switch (kind) {
                case FLOAT64, FLOAT32 -> !anyWide(b, kind, v -> !Double.isFinite(v));
                case FLOAT16 -> halvesFinite(b, FLOAT16_INFINITY);
                case BFLOAT16 -> halvesFinite(b, BFLOAT16_INFINITY);
                case INT64 -> true;
            };
        }

        @Override
        public boolean anyNegative(RawTensor tensor) {
            ByteBuffer b = tensor.data();
            TensorKind kind = TensorKind.ofDtypeName(tensor.dtype);
            switch (kind) {
                case FLOAT64, FLOAT32 -> {
                    return anyWide(b, kind, v -> v < 0);
                }
                case FLOAT16 -> {
                    return halvesAnyNegative(b, FLOAT16_INFINITY);
                }
                case BFLOAT16 -> {
                    return halvesAnyNegative(b, BFLOAT16_INFINITY);
                }
                case INT64 -> {
                    for (int i = 0; i < b.limit(); i += 8) {
                        if (b.getLong(i) < 0) {
                            return true;
                        }
                    }
                }
            }
            return false;
        }
    };

    /** The largest buffer handed out at once, as {@link TensorBytes}'s chunks. */
    private static final int CHUNK = 1 << 30;
    /** The bits of +infinity, which are also every exponent bit: 5 of float16's, 8 of bfloat16's. */
    private static final int FLOAT16_INFINITY = 0x7C00;
    private static final int BFLOAT16_INFINITY = 0x7F80;

    /**
     * Whether a float64 or float32 element of {@code b} passes {@code test}: each is read as a double, which holds a
     * float exactly (its sign, finiteness and order included).
     *
     * @param kind {@link TensorKind#FLOAT64} or {@link TensorKind#FLOAT32}
     */
    private static boolean anyWide(ByteBuffer b, TensorKind kind, DoublePredicate test) {
        int width = kind.bytes();
        for (int i = 0; i < b.limit(); i += width) {
            if (test.test(kind == TensorKind.FLOAT64 ? b.getDouble(i) : b.getFloat(i))) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether every 16-bit float of {@code b} is finite: an infinity or NaN has every exponent bit set.
     *
     * @param infinity the bits of +infinity of the format
     */
    private static boolean halvesFinite(ByteBuffer b, int infinity) {
        for (int i = 0; i < b.limit(); i += 2) {
            if ((b.getShort(i) & infinity) == infinity) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether a 16-bit float of {@code b} is below zero: the sign bit, a magnitude above zero, and not NaN (NaN < 0
     * is false, as is -0 < 0).
     *
     * @param infinity the bits of +infinity of the format
     */
    private static boolean halvesAnyNegative(ByteBuffer b, int infinity) {
        for (int i = 0; i < b.limit(); i += 2) {
            int bits = b.getShort(i) & 0xFFFF;
            int magnitude = bits & 0x7FFF;
            if ((bits & 0x8000) != 0 && magnitude != 0 && magnitude <= infinity) {
                return true;
            }
        }
        return false;
    }
}
