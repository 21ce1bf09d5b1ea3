#!/bin/bash
# Three back-to-back RUNS=3 compare.sh runs with MuonStepBenchmark's five-second iterations (issue 59), from the
# repository root, after `mvn -B -q -pl muon-core,muon-bench package -DskipTests`; nothing else running. Into this
# folder, or the one given (run.sh FOLDER).
out=${1:-docs/data/step-spread-2026-11-28-longer}
mkdir -p "$out"
echo "commit $(git rev-parse --short HEAD); CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) vCPUs" >> "$out/times.txt"
for i in 1 2 3; do
  echo "run $i start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/times.txt"
  RUNS=3 OUT_DIR="$out/compare-$i" muon-bench/peer/compare.sh > "$out/compare-$i.log" 2>&1
  rc=$?
  echo "run $i end $(date -u +%FT%TZ) rc $rc load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/times.txt"
done
