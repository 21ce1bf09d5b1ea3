package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The checkpoint's bindings-free side, {@link CheckpointBytes} with {@link RawTensor}s and {@link CheckpointFit}: the
 * same file and the same checks as the libtorch side, which is its codec run on libtorch's tensors.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointBytesTest {
    @TempDir
    Path dir;

    private static OptimizerState trained() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("embed.weight", torch.randn(10, 4).requires_grad_(true));
        named.put("fc1.weight", torch.randn(5, 4).requires_grad_(true));
        named.put("fc1.bias", torch.randn(5).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named)
                .muon(MuonConfig.defaults().withLr(0.02).withNorMuon(NorMuonConfig.defaults()))
                .adamW(AdamWConfig.defaults().withLr(3e-3)).build();
        for (int i = 0; i < 2; i++) {
            for (Tensor t : named.values()) {
                t.mutable_grad().put(torch.randn(t.shape()));
            }
            opt.step();
        }
        return opt.state();
    }

    private static byte[] bytes(Tensor t) {
        ByteBuffer out = ByteBuffer.allocate((int) (t.numel() * t.element_size()));
        TensorBytes.forEachChunk(t, out::put);
        return out.array();
    }

    private static byte[] bytes(RawTensor t) {
        ByteBuffer data = t.data();
        byte[] out = new byte[data.remaining()];
        data.get(out);
        return out;
    }

    @Test
    void aFileOfTheLibtorchSide_readsRaw_andWrittenBackRaw_isTheSameFile() throws Exception {
        OptimizerState state = trained();
        Path file = dir.resolve("core.ckpt");
        CheckpointFile.write(file, state);
        CheckpointBytes.Contents raw = CheckpointBytes.read(file, d -> { });
        assertEquals(state.document(), raw.document());
        Map<String, Tensor> tensors = state.tensors();
        assertEquals(tensors.keySet(), raw.tensors().keySet());
        assertTrue(tensors.keySet().contains("second_moment/fc1.weight"), tensors.keySet().toString());
        for (String name : tensors.keySet()) {
            assertArrayEquals(bytes(tensors.get(name)), bytes(raw.tensors().get(name)), name);
        }
        Path again = dir.resolve("raw.ckpt");
        CheckpointBytes.write(again, raw.document(), raw.tensors());
        assertArrayEquals(Files.readAllBytes(file), Files.readAllBytes(again));
        OptimizerState back = CheckpointFile.read(again);
        assertEquals(state.specs(), back.specs());
        assertTrue(StateFit.differences(state, back).isEmpty(), StateFit.differences(state, back).toString());
    }

    @Test
    void theFitCheck_namesTheSameDifferences_onRawTensors() {
        OptimizerState state = trained();
        Map<String, RawTensor> tensors = new LinkedHashMap<>();
        state.tensors().forEach((name, t) -> tensors.put(name, raw(t)));
        assertEquals(List.of(), CheckpointFit.differences(state.document(), state.document(), tensors));
        float[] nan = {Float.NaN, 1, 2, 3, 4};
        tensors.put("value/fc1.bias", RawTensor.of("float32", new long[] {5}, floats(nan)));
        float[] negative = new float[5];
        negative[2] = -1;
        tensors.put("exp_avg_sq/fc1.bias", RawTensor.of("float32", new long[] {5}, floats(negative)));
        tensors.put("second_moment/fc1.weight", RawTensor.of("float64", new long[] {5}, ByteBuffer.allocate(40)));
        List<String> found = CheckpointFit.differences(state.document(), state.document(), tensors).stream()
                .map(StateMismatchException.Difference::toString).toList();
        assertEquals(List.of(
                "'fc1.weight' NorMuon second moment dtype: this optimizer Float, the state Double",
                "'fc1.bias' value values: this optimizer finite, the state NaN or Inf",
                "'fc1.bias' exp_avg_sq values: this optimizer >= 0, the state a negative value"), found);
    }

    @Test
    void aRawTensorTheDocumentDoesNotDescribe_isRefusedAtWrite_andNothingIsWritten() {
        OptimizerState state = trained();
        Path file = dir.resolve("bad.ckpt");
        Map<String, RawTensor> tensors = Map.of("momentum/embed.weight", RawTensor.of("float32", new long[] {10, 4},
                ByteBuffer.allocate(160)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CheckpointBytes.write(file, state.document(), tensors));
        assertEquals("tensor 'momentum/embed.weight' is not '<kind>/<name>' of a parameter of the document with a "
                + "kind of [exp_avg, exp_avg_sq, value]", e.getMessage());
        assertTrue(Files.notExists(file));
    }

    private static RawTensor raw(Tensor t) {
        return RawTensor.of(TensorBytes.kindOf(t.scalar_type()).dtypeName(), t.shape(), ByteBuffer.wrap(bytes(t)));
    }

    private static ByteBuffer floats(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            b.putFloat(v);
        }
        return b.flip();
    }
}
