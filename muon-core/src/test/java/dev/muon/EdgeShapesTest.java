package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Edge shapes and handles (issue 29, item 3): a parameter with no elements is skipped by every path and keeps an
 * empty momentum buffer, as PyTorch's Muon does, and changes nothing for the others; tensors the optimizer hands
 * out may be closed by the caller without harm.
 */
@ExtendWith(NativeScopePerTest.class)
class EdgeShapesTest {
    @TempDir
    Path dir;

    static Stream<Arguments> configs() {
        MuonConfig d = MuonConfig.defaults().withLr(0.02);
        return Stream.of(
                Arguments.of("auto float32", d),
                Arguments.of("gemm (batched)", d.withNsAlgorithm(NsAlgorithm.GEMM)),
                Arguments.of("symmetric float32", d.withNsAlgorithm(NsAlgorithm.SYMMETRIC)),
                Arguments.of("gram float32", d.withNsAlgorithm(NsAlgorithm.GRAM)),
                Arguments.of("symmetric bfloat16", d.withNsAlgorithm(NsAlgorithm.SYMMETRIC)
                        .withNsPrecision(NsPrecision.BFLOAT16)),
                Arguments.of("gram bfloat16", d.withNsAlgorithm(NsAlgorithm.GRAM)
                        .withNsPrecision(NsPrecision.BFLOAT16)),
                Arguments.of("normuon", d.withNorMuon(NorMuonConfig.defaults())));
    }

    /**
     * [0, 300], [5, 0], [0, 0] and two [0, 4] beside [300, 300] and two [4, 4] (which batch): the step runs, the
     * empty ones keep
     * an empty momentum buffer, and the others end exactly as without them.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("configs")
    void emptyParameters_areSkipped_andChangeNothingElse(String name, MuonConfig config) {
        torch.manual_seed(3);
        List<Tensor> full = List.of(torch.randn(300, 300), torch.randn(4, 4), torch.randn(4, 4));
        // Two of one shape would form a same-shape batch of nothing (it divided by zero).
        List<Tensor> empty = List.of(torch.randn(0, 300), torch.randn(5, 0), torch.randn(0, 0), torch.randn(0, 4),
                torch.randn(0, 4));
        List<Tensor> alone = new ArrayList<>();
        full.forEach(t -> alone.add(t.clone()));
        List<Tensor> mixed = new ArrayList<>();
        mixed.add(empty.get(0));
        mixed.add(full.get(0));
        mixed.add(empty.get(1));
        mixed.add(full.get(1));
        mixed.add(full.get(2));
        mixed.add(empty.get(2));
        mixed.add(empty.get(3));
        mixed.add(empty.get(4));
        Muon withEmpty = Muon.of(mixed, config);
        Muon without = Muon.of(alone, config);
        for (int step = 0; step < 3; step++) {
            torch.manual_seed(100 + step);
            for (int i = 0; i < full.size(); i++) {
                Tensor g = torch.randn(full.get(i).shape());
                full.get(i).mutable_grad().put(g);
                alone.get(i).mutable_grad().put(g.clone());
            }
            for (Tensor e : empty) {
                e.mutable_grad().put(torch.randn(e.shape()));
            }
            withEmpty.step();
            without.step();
        }
        for (int i = 0; i < full.size(); i++) {
            assertTrue(full.get(i).equal(alone.get(i)), name + ": parameter " + i + " differs");
        }
        for (Tensor e : empty) {
            assertArrayEquals(e.shape(), withEmpty.momentumBuffer(e).orElseThrow().shape());
        }
        assertEquals(3, withEmpty.stepCount());
    }

    @Test
    void emptyParameter_inMuonAdamW_savesAndLoads() {
        java.util.Map<String, Tensor> named = new java.util.LinkedHashMap<>();
        named.put("a.weight", torch.randn(6, 4).requires_grad_(true));
        named.put("empty.weight", torch.randn(0, 4).requires_grad_(true));
        named.put("b.weight", torch.randn(6, 6).requires_grad_(true));
        named.put("head.weight", torch.randn(3, 6).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named).build();
        TestModels.setGradients(named, 1);
        opt.step();
        Path file = dir.resolve("empty.ckpt");
        opt.save(file);
        opt.load(file);
        assertEquals(1, opt.stepCount());
    }

    /** Closing what an accessor returned leaves the optimizer working: each is a handle of the caller's own. */
    @Test
    void closingReturnedTensors_leavesTheOptimizerWorking() {
        Tensor w = torch.randn(6, 4);
        Tensor v = torch.randn(5, 5);
        Muon muon = Muon.of(List.of(w, v), MuonConfig.defaults().withNorMuon(NorMuonConfig.defaults()));
        w.mutable_grad().put(torch.randn(6, 4));
        v.mutable_grad().put(torch.randn(5, 5));
        muon.step();
        Tensor momentum = muon.momentumBuffer(w).orElseThrow().clone();
        muon.momentumBuffer(w).orElseThrow().close();
        muon.secondMoment(w).orElseThrow().close();
        muon.parameters(0).get(0).close();
        assertTrue(muon.momentumBuffer(w).orElseThrow().equal(momentum));
        muon.save(dir.resolve("after-close.ckpt"));
        w.mutable_grad().put(torch.randn(6, 4));
        muon.step();
        assertEquals(2, muon.stepCount());
        assertArrayEquals(new long[]{6}, muon.secondMoment(w).orElseThrow().shape());
    }
}
