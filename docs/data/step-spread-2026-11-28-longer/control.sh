#!/bin/bash
# The control for MuonStepBenchmark's spread (issue 59): the same JMH harness and iterations over our MuonAdamW step
# and over TorchReferenceStep (torch.optim.Muon's formulas on libtorch's ops and libtorch's AdamW: no code of ours
# in the step), both dtypes, three rounds back to back, right after the three compare.sh runs. From the repository
# root, with compare.sh's environment; nothing else running. Into this folder's control/, or the given folder's
# (control.sh FOLDER).
out=${1:-docs/data/step-spread-2026-11-28-longer}/control
mkdir -p "$out"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
for round in 1 2 3; do
  echo "round $round start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/times.txt"
  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark \
    -p model=gpt2-small-width -p batching=on -p optimizer=muon-adamw,torch-reference -p nsAlgorithm=AUTO \
    -p nsPrecision=float32,bfloat16 -rf json -rff "$out/round-$round.json" > "$out/round-$round.txt" 2>&1
  echo "round $round end $(date -u +%FT%TZ) rc $? load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/times.txt"
done
