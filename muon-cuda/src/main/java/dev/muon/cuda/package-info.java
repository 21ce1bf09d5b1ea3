/**
 * CUDA kernels for Muon's Newton–Schulz iteration, found by muon-core at run time.
 *
 * <p>{@link dev.muon.cuda.CudaNewtonSchulz} runs the two symmetric products of each step ({@code X Xᵀ} and
 * {@code b A + c A²}) on kernels that compute only the tiles on and above the diagonal, and the input's
 * normalisation in two fused passes; {@link dev.muon.cuda.CudaOrthogonalizerProvider} registers it, and
 * {@link dev.muon.cuda.CudaSupport} says whether it can run here and why not. {@link dev.muon.cuda.FusedUpdates}
 * offers the one-pass momentum and parameter-update kernels. Build, fallback and measurements:
 * {@code docs/cuda.md}.
 */
package dev.muon.cuda;
