package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The exported file read by Python's own {@code torch.load} and {@code torch.optim.AdamW.load_state_dict}
 * ({@code src/test/python/check_torch_state.py}, run with Debian's {@code /usr/bin/python3}), and a file written
 * by Python's {@code torch.save} imported back. Skipped, with the reason, where Python's torch is absent.
 */
@ExtendWith(NativeScopePerTest.class)
class TorchStatePythonTest {
    private static final String PYTHON = "/usr/bin/python3";
    private static final Path SCRIPT = Path.of("src/test/python/check_torch_state.py");

    @TempDir
    Path dir;

    /** Why Python's torch cannot run here, or null when it can. */
    private static String pythonTorchUnavailable() {
        if (!Files.isExecutable(Path.of(PYTHON))) {
            return PYTHON + " does not exist";
        }
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import torch").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "'" + PYTHON + " -c \"import torch\"' did not finish in 120 s";
            }
            return p.exitValue() == 0 ? null : "'" + PYTHON + " -c \"import torch\"' failed (install Debian's "
                    + "python3-torch): " + out.strip();
        } catch (IOException | InterruptedException e) {
            return "cannot run " + PYTHON + ": " + e;
        }
    }

    @Test
    void pythonTorch_readsExport_andWritesAFileJavaImports() throws Exception {
        String unavailable = pythonTorchUnavailable();
        assumeTrue(unavailable == null, () -> "Python's torch is not available: " + unavailable);

        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = TorchStateDictTest.optimizer(named, true);
        TorchStateDictTest.train(opt, named, 3);
        Path exported = dir.resolve("java.pt");
        opt.exportTorchStateDict(exported);
        Path expected = dir.resolve("expected.json");
        Files.writeString(expected, expectedJson(opt, named));
        Map<String, Object> before = TorchStateDictTest.restoredOf(opt);

        Path fromPython = dir.resolve("python.pt");
        Process p = new ProcessBuilder(PYTHON, SCRIPT.toString(), exported.toString(), expected.toString(),
                fromPython.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the Python check did not finish");
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("torch.load(weights_only=True) read the file")
                || out.contains("the pickle uses only the opcodes and globals of PyTorch 2.x's"), out);

        // The script doubled exp_avg and Muon's buffers, added 1 to AdamW's steps, set the lrs and the step.
        MuonAdamW imported = TorchStateDictTest.optimizer(named, true);
        imported.importTorchStateDict(fromPython);
        assertEquals(11, imported.stepCount());
        assertEquals(0.03, imported.lr(MuonAdamW.MUON_GROUP));
        assertEquals(0.004, imported.lr(MuonAdamW.ADAMW_GROUP));
        for (String name : imported.assignment().names(OptimizerKind.MUON)) {
            Tensor was = (Tensor) before.get(name + "#momentum");
            assertTrue(imported.muonState(name).orElseThrow().momentum().equal(was.mul(new Scalar(2.0))), name);
        }
        for (String name : imported.assignment().names(OptimizerKind.ADAMW)) {
            AdamWState s = imported.adamWState(name).orElseThrow();
            assertTrue(s.expAvg().equal(((Tensor) before.get(name + "#exp_avg")).mul(new Scalar(2.0))), name);
            assertTrue(s.expAvgSq().equal((Tensor) before.get(name + "#exp_avg_sq")), name);
            assertEquals((long) before.get(name + "#step") + 1, s.step(), name);
        }
    }

    /** Names, shapes, every state tensor's values (float32 as their exact doubles) and the lrs, as JSON. */
    private static String expectedJson(MuonAdamW opt, Map<String, Tensor> named) {
        StringBuilder json = new StringBuilder("{\"step\": ").append(opt.stepCount());
        json.append(", \"muon_lr\": ").append(opt.lr(MuonAdamW.MUON_GROUP));
        json.append(", \"adamw_lr\": ").append(opt.lr(MuonAdamW.ADAMW_GROUP));
        json.append(", \"param_names\": [");
        json.append(String.join(", ", named.keySet().stream().map(n -> "\"" + n + "\"").toList())).append("]");
        Map<String, String> shapes = new LinkedHashMap<>();
        named.forEach((n, t) -> shapes.put(n, java.util.Arrays.toString(t.shape())));
        json.append(", \"shapes\": ").append(object(shapes));
        Map<String, String> muon = new LinkedHashMap<>();
        for (String name : opt.assignment().names(OptimizerKind.MUON)) {
            muon.put(name, values(opt.muonState(name).orElseThrow().momentum()));
        }
        json.append(", \"muon\": ").append(object(muon));
        Map<String, String> adamW = new LinkedHashMap<>();
        for (String name : opt.assignment().names(OptimizerKind.ADAMW)) {
            AdamWState s = opt.adamWState(name).orElseThrow();
            adamW.put(name, "{\"exp_avg\": " + values(s.expAvg()) + ", \"exp_avg_sq\": " + values(s.expAvgSq())
                    + ", \"step\": " + s.step() + "}");
        }
        json.append(", \"adamw\": ").append(object(adamW)).append("}");
        return json.toString();
    }

    private static String object(Map<String, String> members) {
        List<String> parts = members.entrySet().stream().map(e -> "\"" + e.getKey() + "\": " + e.getValue())
                .toList();
        return "{" + String.join(", ", parts) + "}";
    }

    /** Every element as the decimal of its exact double value: float32 → float64 is exact, and so is the text. */
    private static String values(Tensor t) {
        Tensor d = t.detach().cpu().to(torch.ScalarType.Double).contiguous();
        double[] v = new double[(int) d.numel()];
        new DoublePointer(d.data_ptr()).capacity(v.length).get(v);
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            out.append(i == 0 ? "" : ", ").append(v[i]);
        }
        return out.append("]").toString();
    }
}
