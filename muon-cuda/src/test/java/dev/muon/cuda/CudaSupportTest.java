package dev.muon.cuda;

import org.junit.jupiter.api.Test;

import java.net.URL;
import java.net.URLClassLoader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The availability probe, its cached result and its reasons. */
class CudaSupportTest {

    @Test
    void availability_agreesWithCause_andEnsureAvailable() {
        Throwable cause = CudaSupport.unavailabilityCause();
        assertEquals(cause == null, CudaSupport.isAvailable());
        if (cause == null) {
            CudaSupport.ensureAvailable();
            System.out.println("CudaSupport: CUDA kernels available");
        } else {
            // Printed so that a CPU-only CI log says why the GPU tests skip.
            System.out.println("CudaSupport: CUDA kernels unavailable: " + cause.getMessage());
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    CudaSupport::ensureAvailable);
            assertSame(cause, e.getCause());
            assertTrue(e.getMessage().contains(cause.getMessage()), e.getMessage());
        }
    }

    @Test
    void probe_isCached() {
        assertSame(CudaSupport.unavailabilityCause(), CudaSupport.unavailabilityCause());
    }

    @Test
    void disableProperty_forcesTheFallback_withItsOwnReason() {
        Throwable cause = CudaSupport.probe("true", getClass().getClassLoader());
        assertNotNull(cause);
        assertEquals("-Ddev.muon.cuda.disable=true forces the libtorch fallback; remove it to use the CUDA kernels",
                cause.getMessage());
        assertTrue(cause instanceof UnsupportedOperationException);
    }

    @Test
    void disablePropertyNeitherTrueNorFalse_isTheCause_namingIt() {
        Throwable cause = CudaSupport.probe("1", getClass().getClassLoader());
        assertTrue(cause instanceof IllegalArgumentException, String.valueOf(cause));
        assertEquals("-Ddev.muon.cuda.disable must be true or false, got '1'", cause.getMessage());
    }

    @Test
    void disablePropertyFalse_doesNotDisable() {
        Throwable cause = CudaSupport.probe("false", getClass().getClassLoader());
        assertTrue(cause == null || !cause.getMessage().contains("forces the libtorch fallback"),
                String.valueOf(cause));
    }

    @Test
    void jarWithoutKernels_saysItWasBuiltWithoutNvcc() throws Exception {
        try (URLClassLoader empty = new URLClassLoader(new URL[0], null)) {
            Throwable cause = CudaSupport.probe(null, empty);
            assertNotNull(cause);
            assertTrue(cause.getMessage().contains("built without nvcc"), cause.getMessage());
            assertTrue(cause.getMessage().contains(CudaKernels.SYMMETRIC_IMAGE), cause.getMessage());
        }
    }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> withoutCudaCases() {
        return java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of(false, null,
                        "libtorch was loaded without CUDA (UnsatisfiedLinkError: no jnicudart); put "
                                + "org.bytedeco:pytorch:<version>:linux-x86_64-gpu on the class path and run with "
                                + "-Dorg.bytedeco.javacpp.platform.extension=-gpu"),
                org.junit.jupiter.params.provider.Arguments.of(true, null,
                        "libtorch's GPU natives are on the class path, but JavaCPP loaded its CPU build "
                                + "(UnsatisfiedLinkError: no jnicudart); run with "
                                + "-Dorg.bytedeco.javacpp.platform.extension=-gpu"),
                org.junit.jupiter.params.provider.Arguments.of(true, "",
                        "libtorch's GPU natives are on the class path, but JavaCPP loaded its CPU build "
                                + "(UnsatisfiedLinkError: no jnicudart); run with "
                                + "-Dorg.bytedeco.javacpp.platform.extension=-gpu"),
                org.junit.jupiter.params.provider.Arguments.of(true, "-gpu",
                        "libtorch's GPU natives are on the class path and selected, but did not load "
                                + "(UnsatisfiedLinkError: no jnicudart); the CUDA libraries they link against "
                                + "(cuBLAS, cuDNN, NCCL, ...) must be on the library path: the GPU test bundle's "
                                + "run.sh libs lists which are missing (CUDA documentation, 'GPU test bundle for a "
                                + "machine without Java or Maven')"));
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "GPU natives on the class path {0}, extension {1}")
    @org.junit.jupiter.params.provider.MethodSource("withoutCudaCases")
    void withoutCuda_namesTheMissingStep(boolean gpuNatives, String extension, String message) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("no jnicudart in java.library.path: /usr/lib");
        UnsupportedOperationException cause = CudaSupport.withoutCuda(error, gpuNatives, extension);
        assertEquals(message, cause.getMessage());
        assertSame(error, cause.getCause());
    }

    @Test
    void withoutCudaLibtorch_theCauseNamesTheGpuNatives() {
        if (getClass().getClassLoader().getResource(CudaKernels.SYMMETRIC_IMAGE) == null) {
            System.out.println("CudaSupportTest: kernels not built here (no nvcc); skipping the libtorch-CUDA probe");
            return;
        }
        Throwable cause = CudaSupport.probe(null, getClass().getClassLoader());
        if (cause != null) {
            System.out.println("CudaSupportTest: probe says: " + cause.getMessage());
            assertTrue(cause.getMessage().contains("linux-x86_64-gpu") || cause.getMessage().contains("GPU natives")
                    || cause.getMessage().contains("NVIDIA")
                    || cause.getMessage().contains("org.bytedeco:cuda"), cause.getMessage());
        } else {
            assertNull(CudaSupport.unavailabilityCause());
        }
    }
}
