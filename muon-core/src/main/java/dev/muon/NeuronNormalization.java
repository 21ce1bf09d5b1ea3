package dev.muon;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * NorMuon's neuron-wise normalization of a Newton–Schulz output (Li et al., arXiv 2510.05491, Algorithm 1), with
 * the reusable workspaces it writes into. For a matrix {@code O} of {@code m} rows and {@code n} columns and its
 * per-row second moment {@code v} (a vector of {@code m}, updated in place):
 * <pre>
 *   v = beta2·v + (1 − beta2)·mean_cols(O ⊙ O)
 *   Ô = O / (sqrt(v) + eps)                        (row i divided by sqrt(v[i]) + eps)
 *   U = sqrt(m·n) · Ô / ‖Ô‖_F                      (unit RMS; the caller multiplies by lr·0.2·extraScale)
 * </pre>
 * A stack of matrices normalizes each matrix on its own. Holds no optimizer: it gets tensors and settings.
 */
final class NeuronNormalization {
    private static final long[] LAST_DIM = {-1};
    private static final long[] LAST_TWO_DIMS = {-2, -1};
    /**
     * The floor of ‖Ô‖_F: only an all-zero update (a zero gradient from the start) reaches it, and then the update
     * stays zero instead of becoming 0/0.
     */
    private static final double NORM_FLOOR = Float.MIN_NORMAL;

    private final Map<String, Tensor> workspaces = new HashMap<>();

    /**
     * Advances {@code v} by {@code o} and returns the unit-RMS update {@code U}, a view of a workspace that the next
     * call for the same shape overwrites.
     *
     * @param o      the Newton–Schulz output, {@code [..., m, n]}, any dtype and strides
     * @param v      the second moment, {@code [..., m]}, float32 or float64 ({@link UpdateRecipe#SECOND_MOMENT});
     *               updated in place
     * @param config beta2 and eps
     * @return {@code U}, in {@code v}'s dtype, of {@code o}'s shape
     */
    Tensor normalize(Tensor o, Tensor v, NorMuonConfig config) {
        long[] shape = o.shape();
        long rows = shape[shape.length - 2];
        long cols = shape[shape.length - 1];
        Tensor u = workspace(o, v.scalar_type());
        u.copy_(o);
        Scalar two = new Scalar(2.0);
        // mean_cols(O ⊙ O) = ‖row‖² / n: the row norms allocate a vector, where O ⊙ O would allocate a matrix.
        Tensor rowNorms = torch.linalg_vector_norm(u, two, LAST_DIM, false, new ScalarTypeOptional());
        v.mul_(new Scalar(config.beta2())).addcmul_(rowNorms, rowNorms, new Scalar((1 - config.beta2()) / cols));
        Tensor denominator = v.sqrt().add_(new Scalar(config.eps()));
        u.div_(denominator.unsqueeze(-1));
        Tensor norm = torch.linalg_vector_norm(u, two, LAST_TWO_DIMS, true, new ScalarTypeOptional());
        norm.clamp_min_(new Scalar(NORM_FLOOR));
        // Divided on the device, never read back: a host sync per parameter would stall a GPU step.
        return u.div_(norm).mul_(new Scalar(Math.sqrt((double) rows * cols)));
    }

    /** A reusable tensor of {@code like}'s shape and device in {@code dtype}, contiguous. */
    private Tensor workspace(Tensor like, ScalarType dtype) {
        String key = Arrays.toString(like.shape()) + dtype.value + ":" + like.device().type().value + ":"
                + like.device().index();
        return workspaces.computeIfAbsent(key, k -> NativeLifetime.outliveScope(torch.empty(like.shape(),
                new TensorOptions(dtype).device(new DeviceOptional(like.device())), null)));
    }
}
