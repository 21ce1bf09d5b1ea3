package dev.muon.cuda;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;

/**
 * What a kernel launch needs to know about one tensor argument, read off the tensor once so that
 * {@link LaunchChecks} can be tested with plain values, without a device.
 *
 * @param name        the argument's name, for error messages
 * @param shape       the sizes
 * @param dtype       the {@link ScalarType#value} code (ScalarType values are not singletons in the bindings)
 * @param contiguous  whether the storage is dense and row-major
 * @param cuda        whether the tensor lives on a CUDA device
 * @param deviceIndex the CUDA device index, or -1 off CUDA
 * @param address     the address of the first element
 */
record Operand(String name, long[] shape, byte dtype, boolean contiguous, boolean cuda, int deviceIndex,
               long address) {

    /**
     * Copies the shape.
     *
     * @throws NullPointerException if {@code name} or {@code shape} is null
     */
    Operand {
        java.util.Objects.requireNonNull(name, "name must not be null");
        shape = shape.clone();
    }

    /**
     * Describes {@code tensor}.
     *
     * @param name   the argument's name
     * @param tensor a defined tensor
     * @return its description
     */
    static Operand of(String name, Tensor tensor) {
        long[] shape = new long[(int) tensor.dim()];
        for (int d = 0; d < shape.length; d++) {
            shape[d] = tensor.size(d);
        }
        boolean cuda = tensor.is_cuda();
        return new Operand(name, shape, tensor.scalar_type().value, tensor.is_contiguous(), cuda,
                cuda ? tensor.device().index() : -1, tensor.data_ptr().address());
    }

    /**
     * The number of elements.
     *
     * @return the product of the sizes
     */
    long numel() {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return n;
    }

    /**
     * Size of dimension {@code d}, negative counting from the end.
     *
     * @param d the dimension
     * @return its size
     */
    long size(int d) {
        return shape[d < 0 ? shape.length + d : d];
    }

    /**
     * Bytes per element of this operand's dtype (the dtypes the kernels take).
     *
     * @return 4 for float32, 2 for bfloat16 and float16, 8 for float64, 1 otherwise
     */
    int elementSize() {
        if (dtype == ScalarType.Float.value || dtype == ScalarType.Int.value) {
            return 4;
        }
        if (dtype == ScalarType.BFloat16.value || dtype == ScalarType.Half.value) {
            return 2;
        }
        if (dtype == ScalarType.Double.value || dtype == ScalarType.Long.value) {
            return 8;
        }
        return 1;
    }

    /**
     * The dtype's name, for messages.
     *
     * @return e.g. {@code BFloat16}
     */
    String dtypeName() {
        for (ScalarType t : ScalarType.values()) {
            if (t.value == dtype) {
                return t.name();
            }
        }
        return "dtype#" + dtype;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Operand other && name.equals(other.name) && Arrays.equals(shape, other.shape)
                && dtype == other.dtype && contiguous == other.contiguous && cuda == other.cuda
                && deviceIndex == other.deviceIndex && address == other.address;
    }

    @Override
    public int hashCode() {
        return 31 * name.hashCode() + Arrays.hashCode(shape) + Long.hashCode(address);
    }

    @Override
    public String toString() {
        return name + Arrays.toString(shape) + ":" + dtypeName();
    }
}
