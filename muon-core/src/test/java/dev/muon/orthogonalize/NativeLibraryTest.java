package dev.muon.orthogonalize;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The loader's probe, its causes and the variant's selection, which every face of {@code libmuoncpu.so}
 * ({@link NativeKernels}, {@link BufferKernels}) reports: pure functions of their inputs, no library loaded.
 */
class NativeLibraryTest {

    static Stream<Arguments> probeCases() {
        return Stream.of(
                Arguments.of(true, "Linux", "amd64", true, "disabled by -Ddev.muon.native.disable=true"),
                Arguments.of(false, "Mac OS X", "aarch64", true,
                        "it is built for Linux x86-64 only, and this is Mac OS X aarch64"),
                Arguments.of(false, "Linux", "aarch64", true,
                        "it is built for Linux x86-64 only, and this is Linux aarch64"),
                Arguments.of(false, "Linux", "amd64", false, "the muon-core jar holds no "
                        + NativeLibrary.LIBRARY_RESOURCE + ": it was built without gcc (build it with gcc on PATH)"));
    }

    @ParameterizedTest(name = "{1} {2}, disabled {0}, in jar {3}")
    @MethodSource("probeCases")
    void probe_namesWhyTheKernelCannotRun(boolean disabled, String os, String arch, boolean inJar, String message) {
        Throwable cause = NativeLibrary.probe(disabled, os, arch, inJar);
        assertEquals(UnsupportedOperationException.class, cause.getClass());
        assertEquals(message, cause.getMessage());
    }

    @Test
    void probe_findsNothingInTheWay_onLinuxX86WithTheLibrary() {
        assertNull(NativeLibrary.probe(false, "Linux", "amd64", true));
        assertNull(NativeLibrary.probe(false, "Linux", "x86_64", true));
    }

    static Stream<Arguments> selections() {
        Set<NativeLibrary.Isa> both = EnumSet.allOf(NativeLibrary.Isa.class);
        Set<NativeLibrary.Isa> avx2 = EnumSet.of(NativeLibrary.Isa.AVX2);
        return Stream.of(
                Arguments.of(null, both, NativeLibrary.Isa.AVX512),
                Arguments.of("auto", both, NativeLibrary.Isa.AVX512),
                Arguments.of("AUTO", avx2, NativeLibrary.Isa.AVX2),
                Arguments.of("avx2", both, NativeLibrary.Isa.AVX2),
                Arguments.of(" Avx512 ", both, NativeLibrary.Isa.AVX512),
                Arguments.of("avx512", EnumSet.of(NativeLibrary.Isa.AVX512), NativeLibrary.Isa.AVX512));
    }

    @ParameterizedTest(name = "{0} on {1}: {2}")
    @MethodSource("selections")
    void select_givesTheVariantAskedFor_orTheWidestForAuto(String requested, Set<NativeLibrary.Isa> runnable,
                                                           NativeLibrary.Isa expected) {
        assertEquals(expected, NativeLibrary.select(requested, runnable));
    }

    static Stream<Arguments> badSelections() {
        Set<NativeLibrary.Isa> both = EnumSet.allOf(NativeLibrary.Isa.class);
        Set<NativeLibrary.Isa> none = EnumSet.noneOf(NativeLibrary.Isa.class);
        String noAvx2 = "this CPU lacks AVX2 and FMA (an Intel Haswell or later, or an AMD Excavator, Zen or later, "
                + "has them)";
        return Stream.of(
                Arguments.of("sse4", both, IllegalArgumentException.class,
                        "dev.muon.native.isa must be auto, avx512 or avx2, got 'sse4'"),
                Arguments.of("", both, IllegalArgumentException.class,
                        "dev.muon.native.isa must be auto, avx512 or avx2, got ''"),
                Arguments.of("avx-512", both, IllegalArgumentException.class,
                        "dev.muon.native.isa must be auto, avx512 or avx2, got 'avx-512'"),
                Arguments.of("avx512", EnumSet.of(NativeLibrary.Isa.AVX2), UnsupportedOperationException.class,
                        "-Ddev.muon.native.isa=avx512 asks for the avx512 kernels, and this CPU lacks AVX-512 F, BW "
                                + "and VL with AVX512_BF16"),
                Arguments.of("avx2", none, UnsupportedOperationException.class,
                        "-Ddev.muon.native.isa=avx2 asks for the avx2 kernels, and this CPU lacks AVX2 and FMA"),
                Arguments.of("auto", none, UnsupportedOperationException.class, noAvx2),
                Arguments.of(null, none, UnsupportedOperationException.class, noAvx2));
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("badSelections")
    void select_refusesAnUnknownValue_andAVariantThisCpuLacks(String requested, Set<NativeLibrary.Isa> runnable,
                                                             Class<? extends RuntimeException> type, String message) {
        RuntimeException e = assertThrows(type, () -> NativeLibrary.select(requested, runnable));
        assertEquals(message, e.getMessage());
    }
}
