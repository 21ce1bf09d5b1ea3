package dev.muon;

import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.LinkedHashMap;
import java.util.Map;

/** The attention arithmetic the QK-Clip tests compute for themselves, and the clip written from the formula. */
final class QkClipFixtures {
    private QkClipFixtures() {
    }

    /**
     * Each query head's largest logit {@code max_ij q_i·k_j / √headDim} over the tokens of {@code x} ({@code [T,
     * in]}), with {@code W_q} and {@code W_k} in PyTorch's Linear layout and key head {@code j} serving query heads
     * {@code j·g … j·g + g − 1}.
     */
    static Tensor maxLogits(Tensor x, Tensor wq, Tensor wk, QkClip.Heads heads) {
        long t = x.size(0);
        int g = heads.queryHeads() / heads.keyHeads();
        Tensor q = x.matmul(wq.t()).view(t, heads.queryHeads(), heads.headDim()).permute(1, 0, 2);
        Tensor k = x.matmul(wk.t()).view(t, heads.keyHeads(), heads.headDim()).permute(1, 0, 2);
        Tensor kPerQuery = k.repeat_interleave(g, new org.bytedeco.pytorch.LongOptional(0), null);
        Tensor s = q.matmul(kPerQuery.transpose(1, 2)).div(new org.bytedeco.pytorch.Scalar(Math.sqrt(heads.headDim())));
        return s.amax(new long[]{1, 2}, false);
    }

    /** {@link #maxLogits} without autograd, as a double array. */
    static double[] maxLogitValues(Tensor x, Tensor wq, Tensor wk, QkClip.Heads heads) {
        try (NoGradGuard noGrad = new NoGradGuard()) {
            return Tensors.values(maxLogits(x, wq, wk, heads));
        }
    }

    /**
     * The rescaled rows of one weight, in float64, computed element by element from the formula of the Kimi K2
     * report: {@code γ_h = min(1, τ/S_h)}; query rows of head {@code h} times {@code γ_h^α}, key rows of a key head
     * serving one query head times {@code γ_h^(1−α)}; with shared key heads, query rows times {@code γ_h} and key
     * rows unchanged.
     *
     * @param w        the weight's values, row-major {@code [rows, cols]}
     * @param cols     the columns
     * @param firstRow the first row of head 0
     * @param query    whether these are query rows
     */
    static double[] referenceClip(double[] w, long cols, long firstRow, boolean query, double[] maxLogits,
                                  QkClip.Heads heads, double tau, double alpha) {
        double[] out = w.clone();
        int g = heads.queryHeads() / heads.keyHeads();
        int count = query ? heads.queryHeads() : heads.keyHeads();
        for (int head = 0; head < count; head++) {
            double factor;
            if (query) {
                double gamma = Math.min(1.0, tau / Math.max(maxLogits[head], tau));
                factor = g == 1 ? Math.pow(gamma, alpha) : gamma;
            } else {
                double gamma = Math.min(1.0, tau / Math.max(maxLogits[head], tau));
                factor = g == 1 ? Math.pow(gamma, 1 - alpha) : 1.0;
            }
            for (long r = firstRow + (long) head * heads.headDim(); r < firstRow + (long) (head + 1) * heads.headDim();
                 r++) {
                for (long c = 0; c < cols; c++) {
                    out[(int) (r * cols + c)] *= factor;
                }
            }
        }
        return out;
    }

    /** Named float64 leaves with gradients required, from one seed. */
    static Map<String, Tensor> named(long seed, Object... nameAndShape) {
        return named(torch.ScalarType.Double, seed, nameAndShape);
    }

    /** Named leaves of {@code dtype} with gradients required, from one seed. */
    static Map<String, Tensor> named(torch.ScalarType dtype, long seed, Object... nameAndShape) {
        torch.manual_seed(seed);
        Map<String, Tensor> map = new LinkedHashMap<>();
        for (int i = 0; i < nameAndShape.length; i += 2) {
            long[] shape = (long[]) nameAndShape[i + 1];
            map.put((String) nameAndShape[i], torch.randn(shape).to(dtype).requires_grad_(true));
        }
        return map;
    }

    /** Deep copies of named leaves, for a twin optimizer. */
    static Map<String, Tensor> copy(Map<String, Tensor> named) {
        Map<String, Tensor> map = new LinkedHashMap<>();
        named.forEach((k, v) -> map.put(k, v.detach().clone().requires_grad_(true)));
        return map;
    }

    /** Gives every tensor the same gradient in both maps (drawn from one seed). */
    static void sameGradients(long seed, Map<String, Tensor> a, Map<String, Tensor> b) {
        torch.manual_seed(seed);
        for (String name : a.keySet()) {
            Tensor g = torch.randn(a.get(name).shape()).to(a.get(name).scalar_type());
            a.get(name).mutable_grad().put(g.clone());
            b.get(name).mutable_grad().put(g.clone());
        }
    }
}
