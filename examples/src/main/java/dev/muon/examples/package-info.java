/**
 * Runnable examples on the public API: {@code FashionMnist} (the README's main job: an MLP and a CNN, AdamW
 * against {@code MuonAdamW.dropIn}), {@code TinyGpt} (a character-level transformer on Debian's fortunes),
 * {@code QuickStart} (generated data, no download), {@code JmhQuickstart} (benchmarking Newton–Schulz on your
 * own shapes) and {@code OrthogonalityTable} (plain and AOL Newton–Schulz against the exact polar factor on these
 * models' Muon updates). The study ({@code MuonStudy}, seeded and lr-tuned, of AdamW against {@code MuonAdamW} and its
 * variants on that model) is in {@code dev.muon.examples.study}. Measured results: {@code docs/examples.md}.
 */
package dev.muon.examples;
