package dev.muon.state;

import dev.muon.internal.Messages;

import java.nio.ByteOrder;
import java.util.Map;

/**
 * The element types muon-core's files hold, by every name a file or a module gives them: the safetensors dtype
 * ({@code F32}), the pickled storage class ({@code FloatStorage}), the checkpoint document's name, which is libtorch's
 * ({@code Float}), and the dtype name both modules use ({@code float32}). Loads no libtorch class: the byte layer
 * reads and checks a file's bytes with it in any module; {@link TensorBytes} maps it to libtorch's scalar types.
 */
enum TensorKind {
    FLOAT64(8, "F64", "DoubleStorage", "Double", "float64"),
    FLOAT32(4, "F32", "FloatStorage", "Float", "float32"),
    FLOAT16(2, "F16", "HalfStorage", "Half", "float16"),
    BFLOAT16(2, "BF16", "BFloat16Storage", "BFloat16", "bfloat16"),
    INT64(8, "I64", "LongStorage", "Long", "int64");

    private final int bytes;
    private final String safetensorsName;
    private final String storageName;
    private final String documentName;
    private final String dtypeName;

    TensorKind(int bytes, String safetensorsName, String storageName, String documentName, String dtypeName) {
        this.bytes = bytes;
        this.safetensorsName = safetensorsName;
        this.storageName = storageName;
        this.documentName = documentName;
        this.dtypeName = dtypeName;
    }

    /** Bytes per element. */
    int bytes() {
        return bytes;
    }

    /** The safetensors header's dtype, e.g. {@code F32}. */
    String safetensorsName() {
        return safetensorsName;
    }

    /** The pickled storage class, e.g. {@code FloatStorage}. */
    String storageName() {
        return storageName;
    }

    /** The checkpoint document's dtype, libtorch's scalar type name, e.g. {@code Float}. */
    String documentName() {
        return documentName;
    }

    /** The dtype name of {@link dev.muon.BufferSpec.Dtype} and of muon-djl, e.g. {@code float32}. */
    String dtypeName() {
        return dtypeName;
    }

    private static final Map<String, TensorKind> BY_SAFETENSORS = Map.of("F64", FLOAT64, "F32", FLOAT32,
            "F16", FLOAT16, "BF16", BFLOAT16, "I64", INT64);
    private static final Map<String, TensorKind> BY_STORAGE = Map.of("DoubleStorage", FLOAT64,
            "FloatStorage", FLOAT32, "HalfStorage", FLOAT16, "BFloat16Storage", BFLOAT16, "LongStorage", INT64);

    /** The kind of a safetensors dtype, or null. */
    static TensorKind ofSafetensorsName(String name) {
        return BY_SAFETENSORS.get(name);
    }

    /** The kind of a pickled storage class, or null. */
    static TensorKind ofStorageName(String name) {
        return BY_STORAGE.get(name);
    }

    /** The kind of a checkpoint document's dtype ({@code Float}), or null. */
    static TensorKind ofDocumentName(String name) {
        for (TensorKind k : values()) {
            if (k.documentName.equals(name)) {
                return k;
            }
        }
        return null;
    }

    /** The kind of a dtype name ({@code float32}), or null. */
    static TensorKind ofDtypeName(String name) {
        for (TensorKind k : values()) {
            if (k.dtypeName.equals(name)) {
                return k;
            }
        }
        return null;
    }

    /**
     * The dtype name of a document dtype: the kind's ({@code Float} is {@code float32}), or, for a dtype no file holds
     * (an optimizer's own parameter may have one), the name in lower case.
     */
    static String dtypeNameOf(String documentName) {
        TensorKind k = ofDocumentName(documentName);
        return k != null ? k.dtypeName : documentName.toLowerCase(java.util.Locale.ROOT);
    }

    /** The document dtype of a dtype name: the inverse of {@link #dtypeNameOf}. */
    static String documentNameOf(String dtypeName) {
        TensorKind k = ofDtypeName(dtypeName);
        return k != null ? k.documentName : dtypeName;
    }

    /** The safetensors dtypes read, for messages. */
    static String safetensorsNames() {
        return "[F64, F32, F16, BF16, I64]";
    }

    /**
     * Refuses a big-endian platform: the files hold little-endian bytes, which are copied as they are.
     *
     * @throws UnsupportedOperationException on a big-endian platform
     */
    static void requireLittleEndian() {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException("muon-core's files hold little-endian bytes, and this platform "
                    + "is big-endian");
        }
    }

    /**
     * The elements of a shape from a file, checked: no negative size, and neither the element count nor the
     * strides (the product of the sizes, a 0 read as 1, which libtorch computes even for an empty tensor) overflow
     * a long.
     *
     * @param shape the sizes
     * @param what  what to name in a message
     * @return the element count
     * @throws FormatException naming {@code what} and the rule
     */
    static long elementCount(long[] shape, String what) {
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
}
