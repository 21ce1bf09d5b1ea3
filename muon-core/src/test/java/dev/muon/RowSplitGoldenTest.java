package dev.muon;

import dev.muon.golden.Float64Update;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Row-split Newton–Schulz against a float64 reference written from the formulas of {@code docs/algorithm.md}: the
 * golden trajectories' initial parameters and gradients ({@code w0} 8×4, {@code w1} 4×8, three steps), replayed
 * with each parameter orthogonalized in row blocks, must match per step, per block, the reference's momentum
 * buffer, {@code O_k = NS(U_k)} and parameter, within the tolerances of {@code shared/golden/README.md} for the
 * dtype ({@link MuonGoldenTest}'s table). The reference NS itself is first checked against every golden
 * {@code ns_*} case to 1e-12.
 */
@ExtendWith(NativeScopePerTest.class)
class RowSplitGoldenTest {

    /** A way of splitting the two golden parameters, and whether its blocks are equal (one batch). */
    record Form(String label, RowSplit w0, RowSplit w1, boolean batched) {
        RowSplit of(String param) {
            return param.equals("w0") ? w0 : w1;
        }

        @Override
        public String toString() {
            return label;
        }
    }

    static final List<Form> FORMS = List.of(
            new Form("perHead(2)", RowSplit.perHead(2), RowSplit.perHead(2), true),
            new Form("splitRows equal", RowSplit.splitRows(4, 4), RowSplit.splitRows(2, 2), true),
            // Unequal blocks, one by one: a wide, a tall (transposed inside NS), a single row and a 3×8 block.
            new Form("splitRows unequal", RowSplit.splitRows(2, 6), RowSplit.splitRows(1, 3), false));

    static Stream<Arguments> cases() {
        List<GoldenCase> cases = GoldenReader.cases(n -> n.equals("muon_default")
                || n.equals("muon_match_rms_adamw") || n.equals("muon_nesterov_false"));
        assertEquals(3, cases.size());
        List<Arguments> args = new ArrayList<>();
        for (GoldenCase c : cases) {
            for (Form form : FORMS) {
                for (MuonGoldenTest.Precision p : List.of(MuonGoldenTest.FLOAT64, MuonGoldenTest.FLOAT32,
                        MuonGoldenTest.BF16_NS)) {
                    args.add(Arguments.of(c, form, p));
                }
            }
        }
        return args.stream();
    }

    static Stream<GoldenCase> nsCases() {
        return GoldenReader.cases(n -> n.startsWith("ns_")).stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("nsCases")
    void referenceNs_matchesGolden(GoldenCase c) {
        long[] shape = c.shape();
        double[][] out = ReferenceNs.orthogonalize(ReferenceNs.matrix(c.tensor("input", null, 0).data(), shape),
                c.number("a"), c.number("b"), c.number("c"), c.integer("steps"), c.number("eps"));
        double error = Tensors.relativeError(ReferenceNs.flat(out), c.tensor("expected", null, 0).data());
        assertTrue(error <= 1e-12, c.name() + ": reference NS rel error " + error);
    }

    @ParameterizedTest(name = "{0} {1} {2}")
    @MethodSource("cases")
    void trajectory_matchesFloat64ReferencePerBlock(GoldenCase c, Form form, MuonGoldenTest.Precision precision) {
        // Ten times the golden lr: O_k is recovered from the change of a parameter stored in its dtype, which costs
        // half an ulp of p over lr·ratio_k. The smallest blocks (2×4, ratio 0.4 under match_rms_adamw) would make
        // that about 1e-5 in float32 at the golden lr, the size of the tolerance itself; at 10× it is about 1e-6, so
        // the README's tolerances measure the update, not the measurement.
        MuonConfig golden0 = GoldenConfigs.muon(c, precision.ns());
        MuonConfig config = golden0.withLr(10 * golden0.lr());
        List<GoldenCase.Param> golden = c.params();
        List<Tensor> params = new ArrayList<>();
        List<Reference> references = new ArrayList<>();
        Muon.Builder builder = Muon.builder();
        for (GoldenCase.Param p : golden) {
            Tensor t = Tensors.of(c.tensor("param", p.name(), 0), precision.paramType()).requires_grad_(true);
            params.add(t);
            builder.rowSplit(t, form.of(p.name()));
            references.add(new Reference(c.tensor("param", p.name(), 0).data(), p.shape(),
                    form.of(p.name()).blockRows(p.shape()[0], p.name()), config));
        }
        Muon muon = builder.addGroup(params, config).build();
        for (Tensor t : params) {
            assertEquals(form.batched(), muon.rowBlocksOf(t).batched(), form + ": batched");
        }
        int steps = c.integer("num_steps");
        double paramTolerance = precision.paramTolerance(config, steps);
        for (int k = 1; k <= steps; k++) {
            List<double[]> before = new ArrayList<>();
            for (int i = 0; i < params.size(); i++) {
                GoldenCase.Param p = golden.get(i);
                before.add(Tensors.values(params.get(i)));
                double[] grad = c.tensor("grad", p.name(), k).data();
                params.get(i).mutable_grad().put(Tensors.of(grad, p.shape(), precision.paramType()));
                references.get(i).step(grad);
            }
            muon.step();
            for (int i = 0; i < params.size(); i++) {
                Reference ref = references.get(i);
                String where = c.name() + " " + form + " " + precision + " step " + k + " " + golden.get(i).name();
                double bufferError = Tensors.relativeError(muon.momentumBuffer(params.get(i)).orElseThrow(),
                        ref.buffer);
                assertTrue(bufferError <= precision.stateRel(), where + ": momentum rel error " + bufferError);
                double[] after = Tensors.values(params.get(i));
                for (int b = 0; b < ref.blocks.length; b++) {
                    double[] update = ref.recoveredBlockUpdate(before.get(i), after, b);
                    double updateError = Tensors.relativeError(update, ref.blockUpdates[b]);
                    assertTrue(updateError <= precision.updateRel(),
                            where + " block " + b + ": O_k rel error " + updateError);
                }
                double paramError = Tensors.maxAbsError(params.get(i), ref.param);
                assertTrue(paramError <= paramTolerance, where + ": param abs error " + paramError);
            }
        }
    }

    /**
     * The split must matter, or the test above could pass with the split ignored: on the golden inputs, the
     * per-block update differs from the whole-matrix update by far more than any tolerance, and the per-block lr of
     * {@code w0}'s 4×4 blocks differs from the whole 8×4 matrix's under {@code ORIGINAL}.
     */
    @Test
    void split_changesTheUpdate_farBeyondTolerance() {
        GoldenCase c = GoldenReader.cases(n -> n.equals("muon_default")).get(0);
        MuonConfig config = GoldenConfigs.muon(c, MuonGoldenTest.FLOAT64.ns());
        double[] g = c.tensor("grad", "w0", 1).data();
        long[] shape = {8, 4};
        Reference whole = new Reference(new double[32], shape, new long[]{8}, config);
        Reference split = new Reference(new double[32], shape, new long[]{4, 4}, config);
        whole.step(g);
        split.step(g);
        double[] wholeTop = java.util.Arrays.copyOf(whole.blockUpdates[0], 16);
        assertTrue(Tensors.relativeError(wholeTop, split.blockUpdates[0]) > 0.05);
        assertTrue(Math.abs(whole.ratios[0] - split.ratios[0]) > 0.4);
    }

    /** The float64 trajectory of one parameter under a row split, exactly as {@code docs/algorithm.md} states it. */
    static final class Reference {
        final double[] param;
        final double[] buffer;
        final long[] blocks;
        final double[] ratios;
        /** The last step's {@code O_k} of each block, row-major. */
        final double[][] blockUpdates;
        private final int rows;
        private final int cols;
        private final MuonConfig config;

        Reference(double[] initial, long[] shape, long[] blocks, MuonConfig config) {
            this.param = initial.clone();
            this.buffer = new double[initial.length];
            this.rows = (int) shape[0];
            this.cols = (int) shape[1];
            this.blocks = blocks;
            this.config = config;
            this.ratios = new double[blocks.length];
            for (int b = 0; b < blocks.length; b++) {
                ratios[b] = config.adjustLr().ratio(blocks[b], cols);
            }
            this.blockUpdates = new double[blocks.length][];
        }

        void step(double[] g) {
            double mu = config.momentum();
            double[] u = new double[g.length];
            for (int j = 0; j < g.length; j++) {
                buffer[j] = mu * buffer[j] + (1 - mu) * g[j];
                u[j] = config.nesterov() ? (1 - mu) * g[j] + mu * buffer[j] : buffer[j];
            }
            double decay = 1 - config.lr() * config.weightDecay();
            for (int j = 0; j < param.length; j++) {
                param[j] = param[j] * decay;
            }
            int row = 0;
            var ns = config.newtonSchulz();
            var coefficients = ns.nsCoefficients().at(0);
            for (int b = 0; b < blocks.length; b++) {
                int size = (int) blocks[b];
                double[] block = java.util.Arrays.copyOfRange(u, row * cols, (row + size) * cols);
                double[] o = ReferenceNs.flat(ReferenceNs.orthogonalize(
                        ReferenceNs.matrix(block, new long[]{size, cols}), coefficients.a(), coefficients.b(),
                        coefficients.c(), ns.nsSteps(), ns.eps()));
                blockUpdates[b] = o;
                double scaledLr = config.lr() * ratios[b];
                for (int j = 0; j < o.length; j++) {
                    param[row * cols + j] -= scaledLr * o[j];
                }
                row += size;
            }
            assertEquals(rows, row);
        }

        /** {@code O_k} recovered from the change of block {@code b}: {@code (p·decay − p') / (lr·ratio_k)}. */
        double[] recoveredBlockUpdate(double[] before, double[] after, int b) {
            int first = 0;
            for (int k = 0; k < b; k++) {
                first += (int) blocks[k];
            }
            double decay = 1 - config.lr() * config.weightDecay();
            double scaledLr = config.lr() * ratios[b];
            double[] o = new double[(int) blocks[b] * cols];
            for (int j = 0; j < o.length; j++) {
                int at = first * cols + j;
                o[j] = (before[at] * decay - after[at]) / scaledLr;
            }
            return o;
        }
    }

    /** Newton–Schulz in plain float64 loops, as {@code shared/golden/README.md} specifies it. */
    static final class ReferenceNs {
        private ReferenceNs() {
        }

        static double[][] matrix(double[] data, long[] shape) {
            int r = (int) shape[0];
            int c = (int) shape[1];
            double[][] m = new double[r][c];
            for (int i = 0; i < r; i++) {
                System.arraycopy(data, i * c, m[i], 0, c);
            }
            return m;
        }

        static double[] flat(double[][] m) {
            int c = m[0].length;
            double[] out = new double[m.length * c];
            for (int i = 0; i < m.length; i++) {
                System.arraycopy(m[i], 0, out, i * c, c);
            }
            return out;
        }

        static double[][] orthogonalize(double[][] g, double a, double b, double c, int steps, double eps) {
            boolean tall = g.length > g[0].length;
            double[][] x = tall ? Float64Update.transpose(g) : Float64Update.copy(g);
            Float64Update.divide(x, Math.max(Math.sqrt(Float64Update.sumOfSquares(x)), eps));
            for (int s = 0; s < steps; s++) {
                Float64Update.nsStep(x, a, b, c);
            }
            return tall ? Float64Update.transpose(x) : x;
        }
    }
}
