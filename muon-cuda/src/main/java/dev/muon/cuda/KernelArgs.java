package dev.muon.cuda;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The {@code kernelParams} array of one kernel's {@code cuLaunchKernel}: one native slot per argument, made
 * once and rewritten before each launch, so that a launch allocates nothing.
 *
 * <p>The signature is a string with one letter per kernel parameter, in order: {@code P} a device pointer,
 * {@code J} a {@code long long}, {@code I} an {@code int}, {@code F} a {@code float}.
 */
final class KernelArgs {
    private final String signature;
    private final Pointer[] slots;
    private final PointerPointer<Pointer> params;

    /**
     * Allocates the slots.
     *
     * @param signature one letter per parameter (P, J, I, F)
     * @throws IllegalArgumentException on an unknown letter
     */
    KernelArgs(String signature) {
        this.signature = signature;
        slots = new Pointer[signature.length()];
        params = NativeLifetime.outliveScope(new PointerPointer<>(signature.length()));
        for (int i = 0; i < slots.length; i++) {
            char kind = signature.charAt(i);
            slots[i] = switch (kind) {
                case 'P', 'J' -> NativeLifetime.outliveScope(new LongPointer(1));
                case 'I' -> NativeLifetime.outliveScope(new IntPointer(1));
                case 'F' -> NativeLifetime.outliveScope(new FloatPointer(1));
                default -> throw new IllegalArgumentException("signature letter must be one of P, J, I, F, got '"
                        + kind + "' in " + signature);
            };
            params.put(i, slots[i]);
        }
    }

    /**
     * Sets a pointer or {@code long long} argument.
     *
     * @param i     the parameter index
     * @param value the value
     * @return this
     */
    KernelArgs setLong(int i, long value) {
        expect(i, 'P', 'J');
        ((LongPointer) slots[i]).put(0, value);
        return this;
    }

    /**
     * Sets an {@code int} argument.
     *
     * @param i     the parameter index
     * @param value the value
     * @return this
     */
    KernelArgs setInt(int i, int value) {
        expect(i, 'I', 'I');
        ((IntPointer) slots[i]).put(0, value);
        return this;
    }

    /**
     * Sets a {@code float} argument.
     *
     * @param i     the parameter index
     * @param value the value
     * @return this
     */
    KernelArgs setFloat(int i, float value) {
        expect(i, 'F', 'F');
        ((FloatPointer) slots[i]).put(0, value);
        return this;
    }

    /**
     * The array to pass as {@code kernelParams}.
     *
     * @return the native array of argument addresses
     */
    PointerPointer<Pointer> params() {
        return params;
    }

    private void expect(int i, char a, char b) {
        char kind = signature.charAt(i);
        if (kind != a && kind != b) {
            throw new IllegalStateException("kernel parameter " + i + " of " + signature + " is '" + kind
                    + "', not '" + a + "'");
        }
    }
}
