#!/usr/bin/env bash
# One window of AOL's speed: NS 1024x4096 and the GPT-2-small-width MuonAdamW step, plain against AOL.
# Usage, from the repository root after `mvn -B -DskipTests package`: window.sh OUT_DIR
set -euo pipefail
out=$1
mkdir -p "$out"
{ date -u; uptime; lscpu | grep "Model name"; grep -o -m1 'avx512_bf16' /proc/cpuinfo; } > "$out/machine.txt"
java -jar muon-bench/target/benchmarks.jar NewtonSchulzBenchmark -p shape=1024x4096 -p dtype=float32,bfloat16 \
  -p variant=ns-auto -p iteration=plain,plain-4,aol -f 1 -wi 2 -i 5 -rf json -rff "$out/ns.json" > "$out/ns.txt" 2>&1
java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark -p model=gpt2-small-width -p optimizer=muon-adamw \
  -p batching=on -p nsAlgorithm=AUTO -p nsPrecision=float32,bfloat16 -p variant=plain,aol -f 1 -wi 2 -i 5 \
  -rf json -rff "$out/step.json" > "$out/step.txt" 2>&1
{ date -u; uptime; } >> "$out/machine.txt"
