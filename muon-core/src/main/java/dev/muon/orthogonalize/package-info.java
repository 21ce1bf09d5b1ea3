/**
 * Orthogonalization of update matrices: the {@link dev.muon.orthogonalize.Orthogonalizer} interface, the
 * libtorch {@link dev.muon.orthogonalize.NewtonSchulz} implementation with its coefficient schedules, the exact
 * {@link dev.muon.orthogonalize.SvdPolarFactor}, and the service interface through which device-specific
 * implementations plug in.
 *
 * <p>muon-core's own native CPU kernels ({@code libmuoncpu.so}) are loaded once per JVM, by one package-private
 * loader that probes the platform and the CPU, selects the variant ({@code -Ddev.muon.native.isa}) and keeps why
 * they cannot run; three faces call them:
 * <ul>
 *   <li>{@link dev.muon.orthogonalize.NativeKernels}: whether the kernels run in this process, which
 *       {@link dev.muon.orthogonalize.NativeKernels.Variant}, and why not; its kernels (the bfloat16 and float32
 *       Newton–Schulz products) take the addresses of libtorch tensors, through JavaCPP;</li>
 *   <li>{@link dev.muon.orthogonalize.BufferKernels}: the float32 products on direct buffers, for a JVM without
 *       JavaCPP (muon-djl's), with the same availability and cause;</li>
 *   <li>{@code dev.muon.NativeUpdateKernels} (package-private): Muon's momentum and update passes for float32
 *       parameters, called where {@code NativeKernels.variant()} gives a variant.</li>
 * </ul>
 */
package dev.muon.orthogonalize;
