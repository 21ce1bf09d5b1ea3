/**
 * {@code MuonStudy}: the seeded, lr-tuned study of AdamW against {@code MuonAdamW} and its variants on TinyGpt's
 * model, on Debian's GCIDE dictionary (one cell, a resumable sweep, a timing pass, the analysis), and the classes
 * only it uses: the plan, the runs, their CSVs, the statistics and the figures. Measured results:
 * {@code docs/examples.md}.
 */
package dev.muon.examples.study;
