#!/bin/bash
# The update plan A/B: before (a9358f8, the stage blackboard) against after (216b0c7, the typed update plan),
# interleaved, float32 and bfloat16, one round per argument; an even round runs "after" first. It ran as
# `run.sh 1 2`, then as `run.sh 3 4 5` (the log's "done" and "done2" lines end the two).
out=docs/data/ab-update-plan-2026-11-27; mkdir -p $out
for round in "$@"; do
 for dt in float32 bfloat16; do
  for b in before after40; do
   [ $((round % 2)) = 0 ] && { [ $b = before ] && b2=after40 || b2=before; } || b2=$b
   f=$out/r$round-$dt-$b2
   echo "$(date +%T) start $f load $(cut -d' ' -f1 /proc/loadavg)" >> $out/log
   OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -jar <worktree of $b2>/muon-bench/target/benchmarks.jar MuonStepBenchmark \
     -p model=gpt2-small-width -p batching=on -p optimizer=muon-adamw -p nsAlgorithm=AUTO -p nsPrecision=$dt \
     -f 1 -wi 3 -i 12 -rf json -rff $f.json > $f.txt 2>&1
   echo "$(date +%T) end $f load $(cut -d' ' -f1 /proc/loadavg)" >> $out/log
  done
 done
done
echo done >> $out/log
