package dev.muon.examples;

import dev.muon.examples.ExampleErrorsTest.Outcome;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.SvdPolarFactor;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SortedSet;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link OrthogonalityTable} and {@link PolarDistances} at a size that runs in seconds: the measurement on matrices
 * whose answer is known, and the recording path on the examples' models (generated images, the embedded text), so
 * that the program behind {@code docs/algorithm.md}'s AOL table stays compiled and right.
 */
class OrthogonalityTableTest {

    @Test
    void exactPolarFactor_measuredAgainstItself_isAtDistanceZero_withUnitSingularValues() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(3);
            Tensor exact = new SvdPolarFactor().orthogonalize(torch.randn(24, 40));
            PolarDistances.Result r = PolarDistances.compare(exact, exact, 24);
            assertEquals(0.0, r.distance(), 0.0);
            assertEquals(1.0, r.sigmaMin(), 1e-12);
            assertEquals(1.0, r.sigmaMedian(), 1e-12);
            assertEquals(1.0, r.sigmaMax(), 1e-12);
            assertEquals(1.0, r.shareAboveHalf(), 0.0);
        }
    }

    @Test
    void onADecayingSpectrum_aolFourSteps_landsNearerThanPlainFour_andPlainFiveNearerStill() {
        try (PointerScope scope = new PointerScope()) {
            // U = Q₁·diag(σ)·Q₂ᵀ with σ from 1 down to 1e-2, geometrically: every direction within reach of four
            // steps, the small ones only if the start is not too far below 1.
            int n = 48;
            torch.manual_seed(5);
            Tensor q1 = torch.linalg_qr(torch.randn(n, n).to(ScalarType.Double)).get0();
            Tensor q2 = torch.linalg_qr(torch.randn(80, n).to(ScalarType.Double)).get0();
            Tensor sigma = torch.logspace(new org.bytedeco.pytorch.Scalar(0), new org.bytedeco.pytorch.Scalar(-2),
                    n, 10.0, new org.bytedeco.pytorch.TensorOptions(torch.ScalarType.Double));
            Tensor u = q1.mul(sigma.unsqueeze(0)).matmul(q2.t()).to(ScalarType.Float);

            PolarDistances.Matrix m = new PolarDistances().measure(u);

            assertEquals(n, m.rank());
            assertEquals(1e-2, m.smallestOverLargest(), 1e-4);
            for (NsPrecision precision : List.of(NsPrecision.FLOAT32, NsPrecision.BFLOAT16)) {
                double plain5 = distance(m, PolarDistances.Iteration.PLAIN_5, precision);
                double plain4 = distance(m, PolarDistances.Iteration.PLAIN_4, precision);
                double aol4 = distance(m, PolarDistances.Iteration.AOL_4, precision);
                assertTrue(Double.isFinite(aol4) && aol4 < plain4, precision + ": AOL 4 " + aol4 + ", plain 4 "
                        + plain4);
                assertTrue(plain5 < plain4, precision + ": plain 5 " + plain5 + ", plain 4 " + plain4);
            }
        }
    }

    private static double distance(PolarDistances.Matrix m, PolarDistances.Iteration iteration,
                                   NsPrecision precision) {
        int i = PolarDistances.SETTINGS.indexOf(new PolarDistances.Setting(iteration, precision));
        return m.results().get(i).distance();
    }

    @Test
    void theExamplesModels_afterTheirFirstSteps_giveOneRowPerMuonMatrix_fromTheOptimizersOwnInput() {
        SortedSet<Integer> steps = new TreeSet<>(List.of(1, 2));
        PolarDistances distances = new PolarDistances();
        TinyGpt.Settings tiny = TinyGpt.Settings.parse("--width", "16", "--layers", "1", "--heads", "2",
                "--context", "8", "--batch", "4");
        List<OrthogonalityTable.Row> gpt = OrthogonalityTable.tinyGpt(CharCorpus.embedded(), tiny, steps, distances);
        List<OrthogonalityTable.Row> cnn = OrthogonalityTable.fashion("cnn", FashionMnistData.generated(7, 1024, 8),
                new TreeSet<>(List.of(1)), distances);

        assertEquals(List.of("block0.q.weight", "block0.k.weight", "block0.v.weight", "block0.o.weight",
                "block0.fc.weight", "block0.proj.weight"), gpt.stream().filter(r -> r.step() == 2)
                .map(OrthogonalityTable.Row::parameter).toList());
        assertEquals(12, gpt.size());
        // A conv filter is measured as the matrix Muon orthogonalizes, [out, in·3·3].
        assertEquals(List.of("conv1.weight 16x9", "conv2.weight 32x144", "fc1.weight 128x1568"), cnn.stream()
                .map(r -> r.parameter() + " " + r.rows() + "x" + r.cols()).toList());
        for (OrthogonalityTable.Row r : concat(gpt, cnn)) {
            // The parameter moved by exactly the optimizer's Newton–Schulz of the rebuilt U (float32 rounding);
            // a U without the Nesterov blend, or the bare gradient, is off by far more from the second step on.
            assertTrue(r.updateCheck() < 1e-3, r.toString());
            assertEquals(PolarDistances.SETTINGS.size(), r.matrix().results().size());
            for (PolarDistances.Result x : r.matrix().results()) {
                assertTrue(x.distance() >= 0 && x.distance() < 1.5 && x.sigmaMax() < 2, r + ": " + x);
            }
        }

        String report = OrthogonalityTable.report(concat(gpt, cnn), List.of("tinygpt", "cnn"), steps);
        for (PolarDistances.Setting s : PolarDistances.SETTINGS) {
            // Once in each of the three summaries (all, tinygpt, cnn) and once in the table by step.
            assertEquals(4, report.lines().filter(l -> l.startsWith("| " + s.label() + " |")).count(),
                    s.label() + " in:\n" + report);
        }
        assertTrue(report.contains("| tinygpt | block0.fc.weight | 64x16 | 2 |"), report);
    }

    @Test
    void anUnknownModel_isAUsageError_inOneLine() {
        Outcome o = ExampleErrorsTest.run(ExampleCli.commandLine(new OrthogonalityTable()), "--models", "resnet");
        assertEquals(ExampleCli.USAGE, o.exitCode());
        assertEquals(List.of("OrthogonalityTable: --models takes mlp, cnn and tinygpt, got resnet "
                + "(--help lists the options)"), o.errLines());
    }

    private static List<OrthogonalityTable.Row> concat(List<OrthogonalityTable.Row> a,
                                                       List<OrthogonalityTable.Row> b) {
        return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
    }
}
