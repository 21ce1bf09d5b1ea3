#!/usr/bin/env bash
# Our Newton-Schulz and optimizer step against PyTorch eager on this machine, same shapes, dtypes and threads.
# Prerequisite (Debian, once): apt-get install -y python3-torch libopenblas0-pthread
# Usage, from the repository root after `mvn -B -DskipTests package`:  muon-bench/peer/compare.sh
# RUNS=3 runs the whole comparison three times back to back and prints each run's ratios and their medians.
# ISA=avx2 runs both sides as on a CPU without AVX-512 (isa_env.sh says how), after isa_check.py has verified that
# every library took the cap; the check's table, with the CPU model and family, goes to OUT_DIR/capabilities.txt.
# JMH_ARGS (added to both JMH runs) and PEER_REPEATS (pytorch_peer.py's --repeats) shorten a run to check the
# plumbing, e.g. JMH_ARGS="-wi 0 -i 1 -w 1s -r 1s" PEER_REPEATS=1: not a measurement.
#
# Each side runs in the environment where it is fastest, and every candidate is measured for PyTorch: ours with
# OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 (what docs/benchmarks.md recommends for CPU training),
# PyTorch with libgomp's default, with PASSIVE, and with both variables (its OpenBLAS spins too); ratios.py
# compares against PyTorch's fastest run of each entry.
# The NS run includes `torch-reference`, torch.optim.Muon's own iteration on our libtorch through the same
# bindings, which separates "faster kernels" from "newer libtorch".
set -euo pipefail
threads=${THREADS:-2}
runs=${RUNS:-1}
repeats=${PEER_REPEATS:-7}
read -r -a jmh_args <<< "${JMH_ARGS:-}"
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
mkdir -p "$out"
/usr/bin/python3 muon-bench/peer/isa_check.py --isa "$isa_window" --jar "$jar" | tee "$out/capabilities.txt"
dirs=()
for run in $(seq 1 "$runs"); do
  dir="$out/run-$run"
  mkdir -p "$dir"
  dirs+=("$dir")
  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java $isa_jvm_args -jar "$jar" NewtonSchulzBenchmark \
    -p shape=1024x4096 -p variant=ns-auto,torch-reference "${jmh_isa[@]}" "${jmh_args[@]}" -rf json -rff "$dir/ns.json"
  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java $isa_jvm_args -jar "$jar" MuonStepBenchmark \
    -p model=gpt2-small-width -p batching=on -p optimizer=muon-adamw -p nsAlgorithm=AUTO "${jmh_isa[@]}" \
    "${jmh_args[@]}" -rf json -rff "$dir/step.json"
  /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads "$threads" --isa "$isa_window" \
    --repeats "$repeats" --out "$dir/peer-default.json"
  OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads "$threads" \
    --isa "$isa_window" --repeats "$repeats" --out "$dir/peer-passive.json"
  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 /usr/bin/python3 muon-bench/peer/pytorch_peer.py \
    --threads "$threads" --isa "$isa_window" --repeats "$repeats" --out "$dir/peer-passive-blas.json"
done
/usr/bin/python3 muon-bench/peer/ratios.py "${dirs[@]}" | tee "$out/ratios.txt"
