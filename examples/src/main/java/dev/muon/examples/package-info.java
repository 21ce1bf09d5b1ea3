/**
 * Runnable examples on the public API: {@code FashionMnist} (the README's main job: an MLP and a CNN, AdamW
 * against {@code MuonAdamW.dropIn}), {@code TinyGpt} (a character-level transformer on Debian's fortunes),
 * {@code MuonStudy} (the seeded, lr-tuned study of AdamW against {@code MuonAdamW} and its variants on that model,
 * on Debian's GCIDE dictionary: one cell, a resumable sweep, a timing pass, the analysis),
 * {@code QuickStart} (generated data, no download) and {@code JmhQuickstart} (benchmarking Newton–Schulz on your
 * own shapes). Measured results: {@code docs/examples.md}.
 */
package dev.muon.examples;
