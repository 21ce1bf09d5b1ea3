/**
 * Orthogonalization of update matrices: the {@link dev.muon.orthogonalize.Orthogonalizer} interface, the
 * libtorch {@link dev.muon.orthogonalize.NewtonSchulz} implementation with its coefficient schedules, the exact
 * {@link dev.muon.orthogonalize.SvdPolarFactor}, and the service interface through which device-specific
 * implementations plug in.
 */
package dev.muon.orthogonalize;
