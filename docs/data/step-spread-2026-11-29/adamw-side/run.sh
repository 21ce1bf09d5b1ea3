#!/bin/bash
# The AdamW update alone over the GPT-2-small-width set's 67 tensors: libtorch's AdamW (adamw) against MuonAdamW with
# every parameter on its AdamW side (adamw-side), twice each, interleaved; from the repository root after
# `mvn -B -q -pl muon-core,muon-bench package -DskipTests`; nothing else running.
out=docs/data/step-spread-2026-11-29/adamw-side
{ uptime; date -u +%FT%TZ; } > "$out/times.txt"
OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark \
  -p model=gpt2-small-width -p optimizer=adamw,adamw-side,adamw,adamw-side -p nsPrecision=float32 \
  -p nsAlgorithm=AUTO -p batching=on -f 2 -wi 3 -w 2s -i 8 -r 2s -rf json -rff "$out/jmh.json" > "$out/jmh.log" 2>&1
{ uptime; date -u +%FT%TZ; } >> "$out/times.txt"
