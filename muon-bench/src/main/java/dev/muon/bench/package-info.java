/**
 * JMH benchmarks of muon-core, one class per question (Newton–Schulz kernels, the optimizer step, checkpoints,
 * distributed steps), each with a "how to run" line in its javadoc; results and the machines they ran on are in
 * {@code docs/benchmarks.md}. They use the public API only.
 */
package dev.muon.bench;
