#!/usr/bin/env bash
# Our Newton-Schulz and optimizer step against PyTorch eager on this machine, same shapes, dtypes and threads.
# Prerequisite (Debian, once): apt-get install -y python3-torch libopenblas0-pthread
# Usage, from the repository root after `mvn -B -DskipTests package`:  muon-bench/peer/compare.sh
# RUNS=3 runs the whole comparison three times back to back and prints each run's ratios and their medians; under
# each step row, the spread of the step (median, 90th and 99th percentile, slowest) per JMH iteration and per
# same-process step, ours and the reference's (ratios.py, StepSpread).
# ISA=avx2 runs both sides as on a CPU without AVX-512 (isa_env.sh says how), after isa_check.py has verified that
# every library took the cap; the check's table, with the CPU model and family, goes to OUT_DIR/capabilities.txt.
# JMH_ARGS (added to both JMH runs) and PEER_REPEATS (pytorch_peer.py's --repeats) shorten a run to check the
# plumbing, e.g. JMH_ARGS="-wi 0 -i 1 -w 1s -r 1s" PEER_REPEATS=1: not a measurement.
# DTYPE=float32 or DTYPE=bfloat16 measures one dtype only (both sides), and PEER_ENVS (default
# "default passive passive-blas") chooses PyTorch's environments: in the AVX2 window a bfloat16 step runs on ATen's
# reference GEMM for minutes, so its entries are measured apart, with fewer repeats, in the environment that wins.
#
# Each side runs in the environment where it is fastest, and every candidate is measured for PyTorch: ours with
# OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 (what docs/benchmarks.md recommends for CPU training),
# PyTorch with libgomp's default, with PASSIVE, and with both variables (its OpenBLAS spins too); ratios.py
# compares against PyTorch's fastest run of each entry.
# The NS run includes `torch-reference`, torch.optim.Muon's own iteration on our libtorch through the same
# bindings, which separates "faster kernels" from "newer libtorch".
# Every run also times the whole step against the same on our libtorch (dev.muon.bench.SameProcessStep: our
# MuonAdamW and torch.optim.Muon's formulas with libtorch's AdamW, stepped alternately in one JVM, so both see the
# same neighbours), written to same-process.json; ratios.py prints that "same-process" ratio beside the PyTorch
# peer's for every step entry. SAME_PROCESS_ARGS (e.g. "--runs 1 --steps 1 --warmup 0") shortens it to check the
# plumbing; SAME_PROCESS=0 skips it, SAME_PROCESS=1 runs it in the AVX2 window's bfloat16 too (by default that
# entry is left out there: the reference's bfloat16 products run on ATen's reference GEMM, minutes per step).
set -euo pipefail
threads=${THREADS:-2}
runs=${RUNS:-1}
repeats=${PEER_REPEATS:-7}
read -r -a jmh_args <<< "${JMH_ARGS:-}"
read -r -a same_process_args <<< "${SAME_PROCESS_ARGS:-}"
same_process=${SAME_PROCESS:-auto}
case "$same_process" in
  auto|0|1) ;;
  *) echo "SAME_PROCESS must be 0, 1 or unset, got '$same_process'" >&2; exit 2 ;;
esac
read -r -a peer_envs <<< "${PEER_ENVS:-default passive passive-blas}"
for env in "${peer_envs[@]}"; do
  case "$env" in
    default|passive|passive-blas) ;;
    *) echo "PEER_ENVS holds default, passive and passive-blas, got '$env'" >&2; exit 2 ;;
  esac
done
dtype=${DTYPE:-}
ns_dtype=()
step_dtype=()
peer_dtype=()
case "$dtype" in
  "") ;;
  float32|bfloat16)
    ns_dtype=(-p "dtype=$dtype")
    step_dtype=(-p "nsPrecision=$dtype")
    peer_dtype=(--dtype "$dtype")
    ;;
  *)
    echo "DTYPE must be float32 or bfloat16 (or unset for both), got '$dtype'" >&2
    exit 2
    ;;
esac
out=${OUT_DIR:-muon-bench/target/peer}
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "PyTorch is missing: apt-get install -y python3-torch libopenblas0-pthread" >&2
  exit 2
fi
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
jar=muon-bench/target/benchmarks.jar
source "$(dirname "$0")/isa_env.sh"
jmh_isa=()
if [ -n "$isa_jvm_args" ]; then
  jmh_isa=(-jvmArgsAppend "$isa_jvm_args")
fi
# The same-process step's dtypes: DTYPE's, or both; without bfloat16 in the AVX2 window unless SAME_PROCESS=1.
same_dtypes=()
for d in float32 bfloat16; do
  if [ -n "$dtype" ] && [ "$dtype" != "$d" ]; then
    continue
  fi
  if [ "$same_process" = 0 ] || { [ "$same_process" = auto ] && [ "$isa_window" = avx2 ] && [ "$d" = bfloat16 ]; }; then
    continue
  fi
  same_dtypes+=(--dtype "$d")
done
mkdir -p "$out"
/usr/bin/python3 muon-bench/peer/isa_check.py --isa "$isa_window" --jar "$jar" | tee "$out/capabilities.txt"
dirs=()
for run in $(seq 1 "$runs"); do
  dir="$out/run-$run"
  mkdir -p "$dir"
  dirs+=("$dir")
  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java $isa_jvm_args -jar "$jar" NewtonSchulzBenchmark \
    -p shape=1024x4096 -p variant=ns-auto,torch-reference "${ns_dtype[@]}" "${jmh_isa[@]}" "${jmh_args[@]}" \
    -rf json -rff "$dir/ns.json"
  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java $isa_jvm_args -jar "$jar" MuonStepBenchmark \
    -p model=gpt2-small-width -p batching=on -p optimizer=muon-adamw -p nsAlgorithm=AUTO "${step_dtype[@]}" \
    "${jmh_isa[@]}" "${jmh_args[@]}" -rf json -rff "$dir/step.json"
  if [ "${#same_dtypes[@]}" -gt 0 ]; then
    OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java $isa_jvm_args -cp "$jar" dev.muon.bench.SameProcessStep \
      "${same_dtypes[@]}" "${same_process_args[@]}" --out "$dir/same-process.json"
  fi
  peer=(muon-bench/peer/pytorch_peer.py --threads "$threads" --isa "$isa_window" --repeats "$repeats"
        "${peer_dtype[@]}")
  for env in "${peer_envs[@]}"; do
    case "$env" in
      default) /usr/bin/python3 "${peer[@]}" --out "$dir/peer-default.json" ;;
      passive) OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "${peer[@]}" --out "$dir/peer-passive.json" ;;
      passive-blas) OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 /usr/bin/python3 "${peer[@]}" \
                      --out "$dir/peer-passive-blas.json" ;;
    esac
  done
done
/usr/bin/python3 muon-bench/peer/ratios.py "${dirs[@]}" | tee "$out/ratios.txt"
