package dev.muon.golden;

import dev.muon.HyperballConfig;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.Orthogonalization;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NsPreconditioning;

import java.util.Random;

/**
 * The update of one Muon parameter written from the formulas of docs/algorithm.md on plain Java arrays, in float64,
 * independent of the update stages: {@code k} matrices of {@code m × n} (a stack; {@code k = 1} for a 2-D weight or
 * a flattened conv filter), each cut into the same row blocks; EMA momentum and the Nesterov blend as libtorch's
 * {@code lerp} computes them, stored in bfloat16 if the config says so; PyTorch's Newton–Schulz per block
 * ({@link #newtonSchulz}); NorMuon per block (the block's rows of the second moment, the block rescaled to
 * unit RMS on its own); the config's {@code AdjustLr} on the block's shape; plain or cautious decoupled weight
 * decay, or Hyperball's sphere over the whole parameter (a fixed radius applied to the initial values), or Muown's
 * row magnitudes and direction ({@link #muownStep}, a 2-D weight).
 * The reference of muon-core's {@code UpdateVariantsReferenceTest} and {@code CombinationTableTest}, and of
 * muon-djl's tests of the same settings: it loads no libtorch class, so a module without bytedeco can use it.
 */
public final class Float64Update {
    private final int k;
    private final int m;
    private final int n;
    private final int[] blocks;
    private final MuonConfig c;
    /** The parameter, its momentum buffer and NorMuon's per-row second moment ({@code k·m} entries), row-major. */
    public final double[] p;
    public final double[] momentum;
    public final double[] v;
    /**
     * Muown's state ({@code k·m} entries each): the row magnitudes, the direction's row norms, Adam's moments of the
     * magnitudes' gradient; and its step count.
     */
    public final double[] muownG;
    public final double[] muownVNorm;
    public final double[] muownMG;
    public final double[] muownVG;
    public long muownStep;
    /** Muown's direction during a step, which each block's {@code O} moves. */
    private double[] direction;

    /**
     * @param values the parameter's initial values, row-major
     * @param k      the matrices of a stack (1 for one matrix)
     * @param m      each matrix's rows
     * @param blocks each matrix's row blocks, top to bottom, or null for the whole matrix
     * @param c      the config
     */
    public Float64Update(double[] values, int k, int m, int[] blocks, MuonConfig c) {
        this.k = k;
        this.m = m;
        this.n = values.length / (k * m);
        this.blocks = blocks == null ? new int[]{m} : blocks.clone();
        this.c = c;
        this.p = values.clone();
        this.momentum = new double[values.length];
        this.v = new double[k * m];
        this.muownG = new double[k * m];
        this.muownVNorm = new double[k * m];
        this.muownMG = new double[k * m];
        this.muownVG = new double[k * m];
        HyperballConfig h = c.hyperball();
        if (h != null && h.fixedRadius()) {
            // Hyperball's fixed sphere: every parameter starts on it.
            double scale = h.radius() / norm(p);
            for (int e = 0; e < p.length; e++) {
                p[e] *= scale;
            }
        }
    }

    /** Scales rows {@code first … first + count − 1} of the parameter (QK-Clip's rescaling). */
    public void scaleRows(int first, int count, double factor) {
        for (int i = first; i < first + count; i++) {
            for (int j = 0; j < n; j++) {
                p[i * n + j] *= factor;
            }
        }
    }

    /** One step with gradient {@code g} (row-major, the parameter's size). */
    public void step(double[] g) {
        if (c.muown() != null) {
            muownStep(g);
            return;
        }
        double mu = c.momentum();
        boolean bf16 = c.momentumPrecision() == MomentumPrecision.BFLOAT16;
        double[] u = new double[g.length];
        for (int e = 0; e < g.length; e++) {
            double b = lerp(momentum[e], g[e], 1 - mu);
            u[e] = c.nesterov() ? lerp(g[e], b, mu) : b;
            momentum[e] = bf16 ? bfloat16(b) : b;
        }
        // Hyperball applies O of the whole parameter after every block has made its part; the other weight hooks
        // the whole parameter's step lr'·O.
        boolean hooked = c.radialBrake() != null || c.relativeUpdate() != null || c.updateFloor() != null;
        double[] whole = c.hyperball() == null && !hooked ? null : new double[p.length];
        for (int mat = 0; mat < k; mat++) {
            int first = 0;
            for (int rows : blocks) {
                updateBlock(u, mat * m + first, rows, whole);
                first += rows;
            }
        }
        if (c.hyperball() != null) {
            hyperball(whole);
        } else if (hooked) {
            hooked(whole);
        }
    }

    /**
     * RadialBrake, RelativeUpdate or the update floor around decay and step, on the whole parameter's step
     * {@code d = lr'·O} (RelativeUpdate's {@code O}, made the step here): {@code p₀} is the parameter before the
     * update.
     */
    private void hooked(double[] d) {
        double before = norm(p);
        if (c.relativeUpdate() != null) {
            double eps = c.relativeUpdate().eps();
            double update = norm(d);
            double scale = before < eps || update < eps ? 0 : c.lr() * before / update;
            for (int e = 0; e < d.length; e++) {
                d[e] *= scale;
            }
        }
        if (c.updateFloor() != null) {
            boolean perRow = c.updateFloor().perRow();
            int span = perRow ? n : d.length;
            for (int start = 0; start < d.length; start += span) {
                double weight = norm(p, start, span);
                double step = Math.max(norm(d, start, span), c.updateFloor().eps());
                double factor = Math.max(1.0, c.updateFloor().floor() * weight * c.lr() / step);
                for (int e = start; e < start + span; e++) {
                    d[e] *= factor;
                }
            }
        }
        for (int e = 0; e < p.length; e++) {
            boolean decay = !c.cautiousWeightDecay() || d[e] * p[e] >= 0;
            double decayed = decay ? p[e] * (1 - c.lr() * c.weightDecay()) : p[e];
            p[e] = decayed - d[e];
        }
        if (c.radialBrake() != null) {
            double after = norm(p);
            double s = after > before ? c.radialBrake().outwardScale() : c.radialBrake().inwardScale();
            double scale = (before + s * (after - before)) / Math.max(after, c.radialBrake().eps());
            for (int e = 0; e < p.length; e++) {
                p[e] *= scale;
            }
        }
    }

    private static double norm(double[] x, int start, int count) {
        double sum = 0;
        for (int e = start; e < start + count; e++) {
            sum += x[e] * x[e];
        }
        return Math.sqrt(sum);
    }

    /**
     * Muown's step (Lion et al., arXiv 2605.10797), a 2-D weight of {@code m} rows: {@code t += 1}; at {@code t = 1}
     * {@code g = v_norm = ‖p‖_row}; {@code u = p/g}, {@code v = u·v_norm}, {@code grad_g = rowsum(grad ⊙ u)},
     * {@code grad_v = (g/v_norm)·(grad − u·grad_g)}; {@code B = B.lerp(grad_v, 1 − μ)}; per block
     * {@code v −= lr'·O(B)}; Adam on {@code g} with the unadjusted lr, then {@code g += (−wd·lr)·g};
     * {@code p = g·v/‖v‖_row}, {@code v_norm = ‖v‖_row}.
     */
    private void muownStep(double[] grad) {
        MuownConfig mc = c.muown();
        int rowsAll = k * m;
        muownStep++;
        if (muownStep == 1) {
            for (int r = 0; r < rowsAll; r++) {
                muownG[r] = rowNorm(p, r);
                muownVNorm[r] = muownG[r];
            }
        }
        direction = new double[p.length];
        double[] gradG = new double[rowsAll];
        for (int r = 0; r < rowsAll; r++) {
            double sum = 0;
            for (int j = 0; j < n; j++) {
                double u = p[r * n + j] / muownG[r];
                direction[r * n + j] = u * muownVNorm[r];
                sum += grad[r * n + j] * u;
            }
            gradG[r] = sum;
            double factor = muownG[r] / muownVNorm[r];
            for (int j = 0; j < n; j++) {
                int e = r * n + j;
                double gradV = factor * (grad[e] - p[e] / muownG[r] * sum);
                momentum[e] = lerp(momentum[e], gradV, 1 - c.momentum());
            }
        }
        for (int mat = 0; mat < k; mat++) {
            int first = 0;
            for (int rows : blocks) {
                updateBlock(momentum, mat * m + first, rows, null);
                first += rows;
            }
        }
        double correction1 = 1 - Math.pow(mc.beta1(), muownStep);
        double correction2 = 1 - Math.pow(mc.beta2(), muownStep);
        for (int r = 0; r < rowsAll; r++) {
            muownMG[r] = lerp(muownMG[r], gradG[r], 1 - mc.beta1());
            muownVG[r] = lerp(muownVG[r], gradG[r] * gradG[r], 1 - mc.beta2());
            double update = (muownMG[r] / correction1) / (Math.sqrt(muownVG[r] / correction2) + mc.adamEps());
            muownG[r] -= c.lr() * update;
            muownG[r] += -c.weightDecay() * c.lr() * muownG[r];
            double norm = rowNorm(direction, r);
            for (int j = 0; j < n; j++) {
                p[r * n + j] = muownG[r] * (direction[r * n + j] / norm);
            }
            muownVNorm[r] = norm;
        }
        direction = null;
    }

    private double rowNorm(double[] x, int r) {
        double sum = 0;
        for (int j = 0; j < n; j++) {
            sum += x[r * n + j] * x[r * n + j];
        }
        return Math.sqrt(sum);
    }

    /** Hyperball: {@code p' = p − lr·R·O/max(‖O‖, eps)}, {@code p = R·p'/max(‖p'‖, eps)}, over the parameter. */
    private void hyperball(double[] o) {
        HyperballConfig h = c.hyperball();
        double radius = h.fixedRadius() ? h.radius() : norm(p);
        double step = c.lr() * radius / Math.max(norm(o), h.eps());
        for (int e = 0; e < p.length; e++) {
            p[e] -= step * o[e];
        }
        double scale = radius / Math.max(norm(p), h.eps());
        for (int e = 0; e < p.length; e++) {
            p[e] *= scale;
        }
    }

    private static double norm(double[] x) {
        double sum = 0;
        for (double value : x) {
            sum += value * value;
        }
        return Math.sqrt(sum);
    }

    /**
     * Orthogonalizes, normalizes and applies the block of {@code rows} rows starting at row {@code base}; with
     * Hyperball, leaves its {@code O} in {@code whole} instead.
     */
    private void updateBlock(double[] u, int base, int rows, double[] whole) {
        double[][] ub = new double[rows][n];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(u, (base + i) * n, ub[i], 0, n);
        }
        double[][] o = c.orthogonalization() == Orthogonalization.EXACT_SVD ? polarFactor(ub) : newtonSchulz(ub, c);
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
            lr = c.lr() * adjustLrRatio(rows, n) * c.extraScale();
        }
        if (c.relativeUpdate() != null) {
            // RelativeUpdate rescales O to the parameter's norm: the lr adjustment has no effect.
            lr = c.lr();
        }
        if (whole != null) {
            // Hyperball and RelativeUpdate gather O (their lr is the lr itself); the other hooks the step lr'·O.
            double factor = c.hyperball() != null || c.relativeUpdate() != null ? 1.0 : lr;
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < n; j++) {
                    whole[(base + i) * n + j] = factor * o[i][j];
                }
            }
            return;
        }
        if (direction != null) {
            // Muown: O moves the direction, v' = v − lr·O.
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < n; j++) {
                    direction[(base + i) * n + j] -= lr * o[i][j];
                }
            }
            return;
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

    /** The config's lr adjustment for a block of {@code rows × cols}, written from its definitions. */
    private double adjustLrRatio(int rows, int cols) {
        return switch (c.adjustLr()) {
            case ORIGINAL -> Math.sqrt(Math.max(1.0, (double) rows / cols));
            case MATCH_RMS_ADAMW -> 0.2 * Math.sqrt(Math.max(rows, cols));
            case SPECTRAL -> Math.sqrt((double) rows / cols);
            case NONE -> 1.0;
        };
    }

    /** libtorch's lerp(self, end, w): {@code self + w·(end − self)} for w < 0.5, else {@code end − (end − self)·(1 −
     * w)}. */
    public static double lerp(double self, double end, double w) {
        return w < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w);
    }

    /** libtorch's cast of a double to bfloat16: to float first, then round to nearest even on 16 bits. */
    public static double bfloat16(double x) {
        int bits = Float.floatToRawIntBits((float) x);
        int rounded = bits + 0x7FFF + ((bits >>> 16) & 1);
        return Float.intBitsToFloat(rounded & 0xFFFF0000);
    }

    /** Standard normal values for a tensor of this shape. */
    public static double[] gaussian(Random random, long[] shape) {
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

    /**
     * The polar factor {@code U Vᵀ} of a full-rank matrix, the exact answer of {@code EXACT_SVD}: the classical cubic
     * iteration {@code X ← 1.5·X − 0.5·X Xᵀ X} from {@code X / ‖X‖_F}, whose singular values all converge to 1
     * (quadratically once near it), run until it stops moving. Independent of any SVD code.
     */
    public static double[][] polarFactor(double[][] u) {
        boolean tall = u.length > u[0].length;
        double[][] x = tall ? transpose(u) : copy(u);
        divide(x, Math.sqrt(sumOfSquares(x)));
        for (int s = 0; s < 200; s++) {
            double[][] xxx = multiply(multiply(x, transpose(x)), x);
            double change = 0;
            for (int i = 0; i < x.length; i++) {
                for (int j = 0; j < x[0].length; j++) {
                    double next = 1.5 * x[i][j] - 0.5 * xxx[i][j];
                    change = Math.max(change, Math.abs(next - x[i][j]));
                    x[i][j] = next;
                }
            }
            if (change < 1e-16) {
                break;
            }
        }
        return tall ? transpose(x) : x;
    }

    /** PyTorch's {@code _zeropower_via_newtonschulz} in float64: transpose tall, normalize, iterate. */
    public static double[][] newtonSchulz(double[][] u, MuonConfig c) {
        boolean tall = u.length > u[0].length;
        double[][] x = tall ? transpose(u) : copy(u);
        if (c.nsPreconditioning() != NsPreconditioning.AOL) {
            // A schedule's safety factor damps the normalisation: X / max(s·‖X‖_F, eps).
            divide(x, Math.max(c.nsCoefficients().normalizationSafety() * Math.sqrt(sumOfSquares(x)), c.eps()));
        }
        for (int s = 0; s < c.nsSteps(); s++) {
            Coefficients abc = c.nsCoefficients().coefficients()
                    .get(c.nsCoefficients().repeating() ? s % c.nsCoefficients().coefficients().size() : s);
            if (c.nsPreconditioning() == NsPreconditioning.AOL && s == 0) {
                aolRescale(x, c.eps());
            }
            nsStep(x, abc.a(), abc.b(), abc.c());
        }
        return tall ? transpose(x) : x;
    }

    /** One Newton–Schulz step on a wide {@code x}, in place: {@code X ← a·X + (b·A + c·A²)·X} with {@code A = X Xᵀ}. */
    /**
     * AOL (Turbo-Muon) before the first step: {@code A = X·Xᵀ}, {@code sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps)},
     * {@code X ← diag(s)·X}; the step then forms {@code diag(s)·A·diag(s)} from the rescaled {@code X}.
     */
    private static void aolRescale(double[][] x, double eps) {
        double[][] a = multiply(x, transpose(x));
        for (int i = 0; i < a.length; i++) {
            double sum = 0;
            for (int j = 0; j < a.length; j++) {
                sum += Math.abs(a[i][j]);
            }
            double scale = 1 / Math.sqrt(Math.max(sum, eps));
            for (int j = 0; j < x[0].length; j++) {
                x[i][j] *= scale;
            }
        }
    }

    public static void nsStep(double[][] x, double a, double b, double c) {
        double[][] gram = multiply(x, transpose(x));
        double[][] gram2 = multiply(gram, gram);
        double[][] poly = new double[gram.length][gram.length];
        for (int i = 0; i < gram.length; i++) {
            for (int j = 0; j < gram.length; j++) {
                poly[i][j] = b * gram[i][j] + c * gram2[i][j];
            }
        }
        double[][] px = multiply(poly, x);
        for (int i = 0; i < x.length; i++) {
            for (int j = 0; j < x[0].length; j++) {
                x[i][j] = a * x[i][j] + px[i][j];
            }
        }
    }

    /** ‖x‖_F², summed row by row. */
    public static double sumOfSquares(double[][] x) {
        double sum = 0;
        for (double[] row : x) {
            for (double value : row) {
                sum += value * value;
            }
        }
        return sum;
    }

    /** Divides every element of {@code x} by {@code norm}, in place. */
    public static void divide(double[][] x, double norm) {
        for (double[] row : x) {
            for (int j = 0; j < row.length; j++) {
                row[j] /= norm;
            }
        }
    }

    /** The matrix product {@code a b}, each element summed in the order of the inner index. */
    public static double[][] multiply(double[][] a, double[][] b) {
        double[][] out = new double[a.length][b[0].length];
        for (int i = 0; i < a.length; i++) {
            for (int l = 0; l < b.length; l++) {
                for (int j = 0; j < b[0].length; j++) {
                    out[i][j] += a[i][l] * b[l][j];
                }
            }
        }
        return out;
    }

    /** A new transposed copy. */
    public static double[][] transpose(double[][] a) {
        double[][] out = new double[a[0].length][a.length];
        for (int i = 0; i < a.length; i++) {
            for (int j = 0; j < a[0].length; j++) {
                out[j][i] = a[i][j];
            }
        }
        return out;
    }

    /** A deep copy. */
    public static double[][] copy(double[][] a) {
        double[][] out = new double[a.length][];
        for (int i = 0; i < a.length; i++) {
            out[i] = a[i].clone();
        }
        return out;
    }
}
