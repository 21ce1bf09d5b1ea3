package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringViewOptional;
import org.bytedeco.pytorch.T_TensorTensorTensor_T;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The exact orthogonalization: the polar factor {@code U Vᵀ} of {@code G = U S Vᵀ}, from an SVD in float64.
 *
 * <p>For tests and for users who want to measure how far Newton–Schulz is from the exact answer. Singular values
 * that are zero to working precision ({@code <= max(rows, cols)·2⁻⁵²·σ_max}) map to zero, as they do under
 * Newton–Schulz, so a zero or rank-deficient input has a unique answer. Slow, and it allocates: not for
 * production steps.
 *
 * <p>Returns a fresh float64 tensor on the input's device.
 */
public final class SvdPolarFactor implements Orthogonalizer {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    private static final double ULP_OF_ONE = Math.ulp(1.0);

    @Override
    public Tensor orthogonalize(Tensor update) {
        MatrixInput.check(update);
        Tensor g = update.to(ScalarType.Double);
        T_TensorTensorTensor_T usv = torch.linalg_svd(g, false, new StringViewOptional());
        Tensor u = usv.get0();
        Tensor s = usv.get1();
        Tensor vh = usv.get2();
        long maxDim = Math.max(update.size(-2), update.size(-1));
        Tensor cutoff = s.amax(new long[]{-1}, true).mul(new Scalar(maxDim * ULP_OF_ONE));
        Tensor kept = s.gt(cutoff).to(ScalarType.Double);
        return u.mul(kept.unsqueeze(-2)).matmul(vh);
    }
}
