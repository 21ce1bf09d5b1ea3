/**
 * Implementation details shared between muon-core's packages and with its sibling artifacts: {@code muon-cuda},
 * {@code muon-bench} and {@code examples} of the same version may use anything here
 * ({@link dev.muon.internal.NativeLifetime}, {@link dev.muon.internal.NewtonSchulzKernels} and
 * {@link dev.muon.internal.NewtonSchulzAccess}, the fused momentum and update stages behind
 * {@link dev.muon.internal.FusedUpdateKernels} and {@link dev.muon.internal.FusedUpdateKernelsProvider},
 * {@link dev.muon.internal.TorchNatives}, {@link dev.muon.internal.Messages},
 * {@link dev.muon.internal.NamedParameters}, the strict reader of the library's switches
 * {@link dev.muon.internal.SystemSwitch}, the value types' list copies {@link dev.muon.internal.NullFreeList}):
 * only what several packages or modules share; what one package alone uses lives beside it (the byte layer of the
 * state files is package-private in {@code dev.muon.state}). No public signature of an API
 * package names a type of this one ({@code ApiSignaturesTest}). Not API and no compatibility
 * promise: any type or method here may change or disappear in any release, so nothing outside this project's
 * artifacts of one version should use it.
 */
package dev.muon.internal;
