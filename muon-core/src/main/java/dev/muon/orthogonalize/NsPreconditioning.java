package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

/**
 * How {@link NewtonSchulz} brings its input's spectrum under 1 before the iteration.
 */
public enum NsPreconditioning {
    /**
     * PyTorch's: {@code X / max(s·‖X‖_F, eps)}, {@code s} the schedule's normalization safety. The default.
     */
    FROBENIUS,
    /**
     * Almost-Orthogonal-Layer rescaling (Prach and Lampert, arXiv 2208.03160), as Turbo-Muon uses it (Boissin,
     * Massena, Mamalet and Serrurier, arXiv 2512.04632): no Frobenius normalization; the first iteration's Gram
     * matrix {@code A = X·Xᵀ} (of the wide orientation) gives {@code sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps)}, and the first
     * iteration runs on {@code X ← diag(s)·X}, {@code A ← diag(s)·A·diag(s)}, so the preconditioning costs a row
     * reduction of {@code A}, not a product. It bounds the spectral norm by 1 (each row sum of {@code |A|} bounds
     * {@code A}'s largest eigenvalue) more tightly than the Frobenius norm does, which lets Turbo-Muon drop one of
     * five iterations: {@code MuonConfig.withAol()} sets it with Turbo-Muon's four steps and coefficients
     * ({@link CoefficientSchedule#turboMuon4()}).
     */
    AOL;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
