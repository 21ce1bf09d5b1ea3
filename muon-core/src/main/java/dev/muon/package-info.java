/**
 * The Muon optimizer over libtorch tensors: {@link dev.muon.Muon} and its configuration
 * {@link dev.muon.MuonConfig}. Newton–Schulz and its extension point live in {@code dev.muon.orthogonalize}.
 */
package dev.muon;
