#!/usr/bin/env bash
# The two CPU thread pools under load: the GPT-2-small-width MuonAdamW step (float32 and bfloat16 Newton-Schulz),
# ours (JMH, MuonStepBenchmark) and PyTorch eager's (pytorch_peer.py), in libgomp's default environment and with
# OMP_WAIT_POLICY=PASSIVE, on a quiet machine and with one core kept busy by a spinning background process.
# Prerequisites (Debian, once): apt-get install -y python3-torch libopenblas0-pthread
# Usage, from the repository root after `mvn -B -DskipTests package`:  muon-bench/peer/threadpools.sh
# Writes OUT_DIR (default muon-bench/target/threadpools)/{step,peer}-{quiet,busy}-{default,passive}.json.
set -euo pipefail
threads=${THREADS:-2}
out=${OUT_DIR:-muon-bench/target/threadpools}
mkdir -p "$out"
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
jar=muon-bench/target/benchmarks.jar
spinner=""
trap '[ -n "$spinner" ] && kill "$spinner" 2>/dev/null || true' EXIT
for load in quiet busy; do
  if [ "$load" = busy ]; then
    # One core busy, as an unrelated job would keep it; bounded so that it can never outlive the script by long.
    timeout 1800 sh -c 'while :; do :; done' &
    spinner=$!
  fi
  for policy in default passive; do
    wait_policy=()
    [ "$policy" = passive ] && wait_policy=(OMP_WAIT_POLICY=PASSIVE)
    env "${wait_policy[@]}" java -jar "$jar" MuonStepBenchmark -p model=gpt2-small-width -p batching=on \
      -p optimizer=muon-adamw -p nsAlgorithm=AUTO -p nsPrecision=float32,bfloat16 \
      -rf json -rff "$out/step-$load-$policy.json"
    env "${wait_policy[@]}" /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads "$threads" \
      --out "$out/peer-$load-$policy.json"
  done
  if [ -n "$spinner" ]; then
    kill "$spinner"
    spinner=""
  fi
done
