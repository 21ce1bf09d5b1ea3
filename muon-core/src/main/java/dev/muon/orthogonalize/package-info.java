/**
 * Orthogonalization of update matrices: the {@link dev.muon.orthogonalize.Orthogonalizer} interface, the
 * libtorch {@link dev.muon.orthogonalize.NewtonSchulz} implementation with its coefficient schedules, the exact
 * {@link dev.muon.orthogonalize.SvdPolarFactor}, the service interface through which device-specific
 * implementations plug in, and {@link dev.muon.orthogonalize.NativeKernels}, which says whether muon-core's own
 * native bfloat16 CPU kernel runs in this process and why not.
 */
package dev.muon.orthogonalize;
