package dev.muon;

import java.util.Random;

/**
 * The update of one Muon parameter written from the formulas of docs/algorithm.md on plain Java arrays, in float64,
 * independent of the update stages: {@code k} matrices of {@code m × n} (a stack; {@code k = 1} for a 2-D weight or
 * a flattened conv filter), each cut into the same row blocks; EMA momentum and the Nesterov blend as libtorch's
 * {@code lerp} computes them, stored in bfloat16 if the config says so; PyTorch's Newton–Schulz per block
 * ({@link NorMuonReferenceTest}); NorMuon per block (the block's rows of the second moment, the block rescaled to
 * unit RMS on its own); {@code AdjustLr.ORIGINAL} on the block's shape; plain or cautious decoupled weight decay.
 * The reference of {@link UpdateVariantsReferenceTest} and {@link CombinationTableTest}.
 */
final class Float64Update {
    final int k;
    final int m;
    final int n;
    final int[] blocks;
    final MuonConfig c;
    /** The parameter, its momentum buffer and NorMuon's per-row second moment ({@code k·m} entries), row-major. */
    final double[] p;
    final double[] momentum;
    final double[] v;

    /**
     * @param values the parameter's initial values, row-major
     * @param k      the matrices of a stack (1 for one matrix)
     * @param m      each matrix's rows
     * @param blocks each matrix's row blocks, top to bottom, or null for the whole matrix
     * @param c      the config
     */
    Float64Update(double[] values, int k, int m, int[] blocks, MuonConfig c) {
        this.k = k;
        this.m = m;
        this.n = values.length / (k * m);
        this.blocks = blocks == null ? new int[]{m} : blocks.clone();
        this.c = c;
        this.p = values.clone();
        this.momentum = new double[values.length];
        this.v = new double[k * m];
    }

    /** Scales rows {@code first … first + count − 1} of the parameter (QK-Clip's rescaling). */
    void scaleRows(int first, int count, double factor) {
        for (int i = first; i < first + count; i++) {
            for (int j = 0; j < n; j++) {
                p[i * n + j] *= factor;
            }
        }
    }

    /** One step with gradient {@code g} (row-major, the parameter's size). */
    void step(double[] g) {
        double mu = c.momentum();
        boolean bf16 = c.momentumPrecision() == MomentumPrecision.BFLOAT16;
        double[] u = new double[g.length];
        for (int e = 0; e < g.length; e++) {
            double b = lerp(momentum[e], g[e], 1 - mu);
            u[e] = c.nesterov() ? lerp(g[e], b, mu) : b;
            momentum[e] = bf16 ? bfloat16(b) : b;
        }
        for (int mat = 0; mat < k; mat++) {
            int first = 0;
            for (int rows : blocks) {
                updateBlock(u, mat * m + first, rows);
                first += rows;
            }
        }
    }

    /** Orthogonalizes, normalizes and applies the block of {@code rows} rows starting at row {@code base}. */
    private void updateBlock(double[] u, int base, int rows) {
        double[][] ub = new double[rows][n];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(u, (base + i) * n, ub[i], 0, n);
        }
        double[][] o = NorMuonReferenceTest.ReferenceParameter.newtonSchulz(ub, c);
        double lr;
        if (c.norMuon() != null) {
            double frobenius = 0;
            for (int i = 0; i < rows; i++) {
                double meanSquare = 0;
                for (int j = 0; j < n; j++) {
                    meanSquare += o[i][j] * o[i][j];
                }
                int r = base + i;
                v[r] = c.norMuon().beta2() * v[r] + (1 - c.norMuon().beta2()) * meanSquare / n;
                for (int j = 0; j < n; j++) {
                    o[i][j] /= Math.sqrt(v[r]) + c.norMuon().eps();
                    frobenius += o[i][j] * o[i][j];
                }
            }
            // Unit RMS over the block, then NorMuon's 0.2·lr·extraScale.
            double scale = Math.sqrt((double) rows * n) / Math.sqrt(frobenius);
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < n; j++) {
                    o[i][j] *= scale;
                }
            }
            lr = 0.2 * c.lr() * c.extraScale();
        } else {
            // AdjustLr.ORIGINAL on the block's own shape.
            lr = c.lr() * Math.sqrt(Math.max(1.0, (double) rows / n)) * c.extraScale();
        }
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < n; j++) {
                int e = (base + i) * n + j;
                boolean decay = !c.cautiousWeightDecay() || o[i][j] * p[e] >= 0;
                double decayed = decay ? p[e] * (1 - c.lr() * c.weightDecay()) : p[e];
                p[e] = decayed - lr * o[i][j];
            }
        }
    }

    /** libtorch's lerp(self, end, w): {@code self + w·(end − self)} for w < 0.5, else {@code end − (end − self)·(1 − w)}. */
    static double lerp(double self, double end, double w) {
        return w < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w);
    }

    /** libtorch's cast of a double to bfloat16: to float first, then round to nearest even on 16 bits. */
    static double bfloat16(double x) {
        int bits = Float.floatToRawIntBits((float) x);
        int rounded = bits + 0x7FFF + ((bits >>> 16) & 1);
        return Float.intBitsToFloat(rounded & 0xFFFF0000);
    }

    /** Standard normal values for a tensor of this shape. */
    static double[] gaussian(Random random, long[] shape) {
        long count = 1;
        for (long s : shape) {
            count *= s;
        }
        double[] out = new double[(int) count];
        for (int e = 0; e < out.length; e++) {
            out[e] = random.nextGaussian();
        }
        return out;
    }
}
