#!/usr/bin/env bash
# One window of AOL's speed on the main job's MLP step (784-256-256-10, MuonStepBenchmark's fashion-mlp set):
# MuonAdamW plain against AOL in float32 and bfloat16, and libtorch's AdamW on the same parameters.
# Usage, from the repository root after `mvn -B -DskipTests package`: window.sh OUT_DIR
set -euo pipefail
out=$1
mkdir -p "$out"
{ date -u; uptime; lscpu | grep -E "Model name|CPU family|Model:"; grep -o -m1 'avx512_bf16' /proc/cpuinfo; } \
  > "$out/machine.txt"
java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark -p model=fashion-mlp -p optimizer=muon-adamw \
  -p batching=off -p nsAlgorithm=AUTO -p nsPrecision=float32,bfloat16 -p variant=plain,aol -f 1 -wi 2 -i 5 \
  -rf json -rff "$out/step.json" > "$out/step.txt" 2>&1
java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark -p model=fashion-mlp -p optimizer=adamw \
  -p batching=off -p nsAlgorithm=AUTO -p nsPrecision=float32 -p variant=plain -f 1 -wi 2 -i 5 \
  -rf json -rff "$out/adamw.json" > "$out/adamw.txt" 2>&1
{ date -u; uptime; } >> "$out/machine.txt"
