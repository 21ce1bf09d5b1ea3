#!/usr/bin/env bash
# The two CPU thread pools under load: the GPT-2-small-width MuonAdamW step (float32 and bfloat16 Newton-Schulz),
# ours (JMH, MuonStepBenchmark) and PyTorch eager's (pytorch_peer.py), on a quiet machine and with one core kept
# busy by a spinning background process, in three environments: libgomp's default ("default"),
# OMP_WAIT_POLICY=PASSIVE ("passive"), and PASSIVE with OPENBLAS_THREAD_TIMEOUT=4 ("passive-blas": OpenBLAS's
# idle threads sleep at once instead of spinning about a tenth of a second after each product).
# Prerequisites (Debian, once): apt-get install -y python3-torch libopenblas0-pthread
# Usage, from the repository root after `mvn -B -DskipTests package`:  muon-bench/peer/threadpools.sh
# ENVIRONMENTS="passive passive-blas" picks environments; PEER=no skips PyTorch; our JVMs run with adaptive
# OpenBLAS threads (-Ddev.muon.blas.adaptiveThreads=true, docs/api.md) unless ADAPTIVE=no.
# Writes OUT_DIR (default muon-bench/target/threadpools)/{step,peer}-{quiet,busy}-ENVIRONMENT.json.
set -euo pipefail
threads=${THREADS:-2}
out=${OUT_DIR:-muon-bench/target/threadpools}
environments=${ENVIRONMENTS:-default passive passive-blas}
peer=${PEER:-yes}
jvm_args=()
[ "${ADAPTIVE:-yes}" = yes ] && jvm_args=(-jvmArgsAppend -Ddev.muon.blas.adaptiveThreads=true)
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
  for environment in $environments; do
    case "$environment" in
      default) settings=() ;;
      passive) settings=(OMP_WAIT_POLICY=PASSIVE) ;;
      passive-blas) settings=(OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4) ;;
      *) echo "unknown environment $environment (default, passive, passive-blas)" >&2; exit 2 ;;
    esac
    env "${settings[@]}" java -jar "$jar" MuonStepBenchmark -p model=gpt2-small-width -p batching=on \
      -p optimizer=muon-adamw -p nsAlgorithm=AUTO -p nsPrecision=float32,bfloat16 "${jvm_args[@]}" \
      -rf json -rff "$out/step-$load-$environment.json"
    if [ "$peer" = yes ]; then
      env "${settings[@]}" /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads "$threads" \
        --out "$out/peer-$load-$environment.json"
    fi
  done
  if [ -n "$spinner" ]; then
    kill "$spinner"
    spinner=""
  fi
done
