/**
 * muon-cuda's implementations of muon-core's internal seams ({@code dev.muon.internal}): the
 * {@link java.util.ServiceLoader} provider of the fused momentum and update stages. Its types are public only
 * because ServiceLoader needs a public provider on the class path; not API and no compatibility promise, like
 * {@code dev.muon.internal}. The user-facing switches are on {@link dev.muon.cuda.CudaSupport}.
 */
package dev.muon.cuda.internal;
