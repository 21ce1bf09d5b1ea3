package dev.muon.cuda;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The fatbins the build packages: all or none (none when built without nvcc), each a CUDA fat binary.
 * A kernel that fails to compile fails the build itself (nvcc runs with failonerror).
 */
class KernelImagesTest {
    /** The fat binary header's magic number, little-endian. */
    private static final int FATBIN_MAGIC = 0xBA55ED50;

    @Test
    void images_areAllPresentOrAllAbsent_andAreFatbins() {
        ClassLoader loader = getClass().getClassLoader();
        int present = 0;
        for (String image : CudaKernels.IMAGES) {
            if (loader.getResource(image) != null) {
                present++;
                byte[] bytes = CudaKernels.readResource(image);
                int magic = ByteBuffer.wrap(bytes, 0, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
                assertEquals(FATBIN_MAGIC, magic, image + " must start with the fatbin magic");
            }
        }
        if (present == 0) {
            System.out.println("KernelImagesTest: no kernel images on the class path (built without nvcc)");
        }
        assertEquals(present == 0 ? 0 : CudaKernels.IMAGES.length, present, "kernel images present");
    }
}
