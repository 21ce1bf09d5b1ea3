#!/bin/bash
# After the three compare.sh runs, nothing else running: the same-process step under `perf stat`'s software events
# (this virtual machine exposes no hardware counters: cycles and instructions read <not supported>), printed every
# 5 s, to see whether page faults, context switches or migrations go on once the steps are warm. From the
# repository root, with compare.sh's environment.
out=docs/data/step-spread-2026-11-28-longer/perf
mkdir -p "$out"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4
for dtype in bfloat16 float32; do
  echo "$dtype start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/times.txt"
  perf stat -I 5000 -e task-clock,context-switches,cpu-migrations,page-faults,major-faults -o "$out/perf-$dtype.txt" \
    -- java -cp muon-bench/target/benchmarks.jar dev.muon.bench.SameProcessStep --dtype "$dtype" --runs 1 \
    --steps 30 --warmup 2 --out "$out/same-$dtype.json" > "$out/same-$dtype.log" 2>&1
  echo "$dtype end $(date -u +%FT%TZ) rc $? load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/times.txt"
done
