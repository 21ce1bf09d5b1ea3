package dev.muon.cuda;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The reusable kernelParams array. */
class KernelArgsTest {

    @Test
    void slots_holdTheirValues_atTheAddressesPassedToTheDriver() {
        KernelArgs args = new KernelArgs("PJIF");
        args.setLong(0, 0x1234_5678_9abcL).setLong(1, -7).setInt(2, 42).setFloat(3, 1.5f);
        var params = args.params();
        assertEquals(0x1234_5678_9abcL, new org.bytedeco.javacpp.LongPointer(params.get(0)).get());
        assertEquals(-7, new org.bytedeco.javacpp.LongPointer(params.get(1)).get());
        assertEquals(42, new org.bytedeco.javacpp.IntPointer(params.get(2)).get());
        assertEquals(1.5f, new org.bytedeco.javacpp.FloatPointer(params.get(3)).get());
    }

    @Test
    void unknownLetter_isRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new KernelArgs("PX"));
        assertEquals("signature letter must be one of P, J, I, F, got 'X' in PX", e.getMessage());
    }

    @Test
    void wrongSetter_isRejected() {
        KernelArgs args = new KernelArgs("IF");
        assertThrows(IllegalStateException.class, () -> args.setLong(0, 1));
        assertThrows(IllegalStateException.class, () -> args.setInt(1, 1));
    }
}
