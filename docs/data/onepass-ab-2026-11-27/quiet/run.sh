#!/bin/bash
# The one-pass bfloat16 step's A/B: before = 216b0c7 (main without it), after = /work/main's build. One at a time.
set -u
log=order-and-load.txt
stamp() { echo "$(date +%T) $* load $(cut -d' ' -f1-3 /proc/loadavg)" >> $log; }
out=docs/data/onepass-ab-2026-11-27/quiet; mkdir -p $out
jar_before=<main without the one-pass step, 216b0c7>/muon-bench/target/benchmarks.jar
jar_after=./muon-bench/target/benchmarks.jar
env="OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4"
for t in 1 2; do
  for side in before after; do
    [ $t = 2 ] && { [ $side = before ] && s=after || s=before; } || s=$side
    jar=jar_$s
    stamp "ns $t $s start"
    env OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -jar ${!jar} NewtonSchulzBenchmark -p shape=512x512,768x768,1024x1024,1280x1280,1536x1536 \
      -p dtype=bfloat16 -p variant=ns-auto -f 1 -wi 1 -i 5 -rf json -rff $out/ns-$t-$s.json > $out/ns-$t-$s.txt 2>&1
    stamp "ns $t $s end rc=$?"
  done
done
stamp "peer768 start"
(cd /work/main && OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads 2 --shapes 768x768 --dtype bfloat16 --no-step --repeats 15 --out $out/peer-768-passive-blas.json > $out/peer-768.txt 2>&1)
(cd /work/main && OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads 2 --shapes 768x768 --dtype bfloat16 --no-step --repeats 15 --out $out/peer-768-passive.json >> $out/peer-768.txt 2>&1)
(cd /work/main && /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads 2 --shapes 768x768 --dtype bfloat16 --no-step --repeats 15 --out $out/peer-768-default.json >> $out/peer-768.txt 2>&1)
stamp "peer768 end"
for t in 1 2 3; do
  for side in before after; do
    [ $t = 2 ] && { [ $side = before ] && s=after || s=before; } || s=$side
    jar=jar_$s
    stamp "step $t $s start"
    env OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -jar ${!jar} MuonStepBenchmark -p model=gpt2-small-width -p optimizer=muon-adamw \
      -p nsPrecision=bfloat16 -p nsAlgorithm=AUTO -p batching=on -f 1 -wi 3 -i 10 -rf json -rff $out/step-$t-$s.json > $out/step-$t-$s.txt 2>&1
    stamp "step $t $s end rc=$?"
  done
done
