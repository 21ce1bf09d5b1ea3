package dev.muon.djl;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.AssignmentRule;
import dev.muon.MuonConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.NorMuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DJL's libtorch and bytedeco's cannot share a JVM, so nothing of bytedeco may be on this module's class path;
 * and the parts of muon-core that muon-djl shares must load and work without it.
 */
class NoBytedecoTest {

    @ParameterizedTest
    @ValueSource(strings = {"org.bytedeco.pytorch.Tensor", "org.bytedeco.javacpp.Pointer",
            "org.bytedeco.openblas.global.openblas"})
    void bytedecoClasses_areNotOnTheClassPath(String className) {
        assertThrows(ClassNotFoundException.class, () -> Class.forName(className, false,
                NoBytedecoTest.class.getClassLoader()));
    }

    @Test
    void muonCoresConfigs_loadAndValidate_withoutTheBindings() {
        MuonConfig muon = MuonConfig.defaults().withLr(0.02).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW)
                .withNsCoefficients(CoefficientSchedule.polarExpress5()).withNorMuon(NorMuonConfig.defaults());
        assertEquals(5, muon.nsSteps());
        assertEquals(0.02 * 0.2 * Math.sqrt(3072), MuonConfig.defaults().withLr(0.02)
                .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).scaledLr(768, 3072), 1e-15);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MuonConfig.defaults().withMomentum(-0.1));
        assertEquals("momentum must be >= 0, got -0.1", e.getMessage());

        AdamWConfig adamW = AdamWConfig.defaults().withLr(3e-4).withBetas(0.9, 0.95);
        assertEquals(new AdamWConfig(3e-4, 0.9, 0.95, 1e-8, 1e-2), adamW);
        assertNotEquals(adamW, AdamWConfig.defaults());
        assertTrue(adamW.toString().contains("beta2=0.95"), adamW.toString());
        assertEquals("beta1 must be in [0, 1), got 1.0",
                assertThrows(IllegalArgumentException.class, () -> adamW.withBetas(1.0, 0.9)).getMessage());

        assertEquals(3.4445, CoefficientSchedule.kellerJordan().at(3).a());
        assertEquals(Coefficients.KELLER_JORDAN.apply(1.0), 0.7010, 1e-4);
        assertEquals(NonFinitePolicy.SKIP, NonFinitePolicy.valueOf("SKIP"));
        assertEquals(OptimizerKind.ADAMW,
                AssignmentRule.defaultRule("lm_head.weight", new long[] {10, 4}).optimizer());
    }

    /** muon-core's checkpoint codec, document, raw tensors and fit check work without the bindings. */
    @Test
    void checkpointFiles_writeReadAndFit_withoutTheBindings(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        dev.muon.state.CheckpointDocument document = new dev.muon.state.CheckpointDocument(3,
                java.util.List.of(MuonConfig.defaults().withNsPrecision(NsPrecision.FLOAT64)), AdamWConfig.defaults(),
                null, java.util.List.of(new dev.muon.state.CheckpointDocument.Parameter("w", OptimizerKind.MUON, 0,
                        new long[] {2, 2}, "Float", null, null, null)));
        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .putFloat(1).putFloat(2).putFloat(3).putFloat(4).flip();
        java.nio.file.Path file = dir.resolve("w.ckpt");
        dev.muon.state.CheckpointBytes.write(file, document, java.util.Map.of("value/w",
                dev.muon.state.RawTensor.of("float32", new long[] {2, 2}, bytes)));
        dev.muon.state.CheckpointBytes.Contents read = dev.muon.state.CheckpointBytes.readFor(file, document,
                d -> java.util.List.of());
        assertEquals(document, read.document());
        assertEquals(4f, read.value("w").data().getFloat(12));
    }

    /**
     * A checkpoint muon-core wrote (its format test's resource, from a Zen 4, 2026-11-25) reads here without the
     * bindings, checksum and all, and fits its own document.
     */
    @Test
    void aCheckpointMuonCoreWrote_readsWithoutTheBindings(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        java.nio.file.Path file = dir.resolve("core.ckpt");
        try (java.io.InputStream in = NoBytedecoTest.class.getResourceAsStream("/checkpoints/gpt-like-step3.ckpt")) {
            assertTrue(in != null, "muon-core's test jar holds its format test's checkpoint");
            java.nio.file.Files.copy(in, file);
        }
        dev.muon.state.CheckpointBytes.Contents read = dev.muon.state.CheckpointBytes.read(file, d -> { });
        assertEquals(3, read.document().step());
        assertTrue(read.document().parameters().size() > 10, read.document().parameters().toString());
        assertTrue(read.tensors().keySet().stream().anyMatch(k -> k.startsWith("momentum/")));
        assertEquals(read.document(), dev.muon.state.CheckpointBytes.readFor(file, read.document(),
                d -> java.util.List.of()).document(), "it fits its own document");
    }

    /** The one place NsPrecision maps to libtorch is a method, which is where the missing bindings show. */
    @Test
    void nsPrecision_loadsWithoutTheBindings_andOnlyItsMappingNeedsThem() {
        assertEquals(3, NsPrecision.values().length);
        // By reflection: a call written here would need libtorch's ScalarType to compile.
        assertThrows(NoClassDefFoundError.class, () -> {
            try {
                NsPrecision.class.getMethod("scalarType").invoke(NsPrecision.FLOAT32);
            } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }
}
