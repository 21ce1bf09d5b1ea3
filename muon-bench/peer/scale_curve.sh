#!/usr/bin/env bash
# The scale curve (issue 32, item 3): one transformer block's Muon step (q, k, v, o of d x d: attention 4·d²; the
# MLP's 4d x d and d x 4d: 8·d²) at each width, float32 and bfloat16 Newton-Schulz, ours (MuonStepBenchmark's
# block-D sets, optimizer=muon, the defaults: AUTO kernels, batching on) against PyTorch eager (pytorch_peer.py
# --block D, in the three OpenMP environments of compare.sh, the fastest counting), time and resident memory.
# Prerequisite and build as for compare.sh. Usage, from the repository root:  muon-bench/peer/scale_curve.sh
# Writes OUT_DIR/scale-curve.md (the table) and OUT_DIR/scale-curve.png (log-log, ratio beside each of our points),
# with the raw JMH JSON, our resident memory lines, the peer's JSON per run and capabilities.txt (CPU model and
# family, and what each library runs) beside them.
# WIDTHS (default 768,1024,1280,1600,2048), THREADS, ISA (as compare.sh: ISA=avx2 for the AVX2 window), JMH_ARGS and
# PEER_REPEATS (e.g. JMH_ARGS="-wi 0 -i 1 -w 1s -r 1s" PEER_REPEATS=1 to check the plumbing: not a measurement).
set -euo pipefail
threads=${THREADS:-2}
widths=${WIDTHS:-768,1024,1280,1600,2048}
repeats=${PEER_REPEATS:-7}
read -r -a jmh_args <<< "${JMH_ARGS:-}"
out=${OUT_DIR:-muon-bench/target/scale}
jar=muon-bench/target/benchmarks.jar
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "PyTorch is missing: apt-get install -y python3-torch libopenblas0-pthread" >&2
  exit 2
fi
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
source "$(dirname "$0")/isa_env.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/ours-memory.jsonl" "$out"/peer-*.json
/usr/bin/python3 muon-bench/peer/isa_check.py --isa "$isa_window" --jar "$jar" | tee "$out/capabilities.txt"
models=$(echo "$widths" | sed -E 's/([0-9]+)/block-\1/g')
OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java $isa_jvm_args -jar "$jar" MuonStepBenchmark \
  -p model="$models" -p optimizer=muon -p nsPrecision=float32,bfloat16 -p nsAlgorithm=AUTO -p batching=on \
  -jvmArgsAppend "$isa_jvm_args -Dmuon.bench.residentOut=$out/ours-memory.jsonl" "${jmh_args[@]}" \
  -rf json -rff "$out/ours.json"
# One process per point, so that one point's freed memory is not another's resident size.
for width in ${widths//,/ }; do
  for dtype in float32 bfloat16; do
    peer=(muon-bench/peer/pytorch_peer.py --threads "$threads" --isa "$isa_window" --block "$width" --dtype "$dtype"
          --repeats "$repeats")
    /usr/bin/python3 "${peer[@]}" --out "$out/peer-default-$width-$dtype.json"
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "${peer[@]}" --out "$out/peer-passive-$width-$dtype.json"
    OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 /usr/bin/python3 "${peer[@]}" \
      --out "$out/peer-passive-blas-$width-$dtype.json"
  done
done
cpu=$(sed -n 's/^== CPU: \(.*\); window.*/\1/p' "$out/capabilities.txt")
java -Djava.awt.headless=true -cp "$jar" dev.muon.bench.ScaleCurvePlot "$out/ours.json" "$out/scale-curve" \
  --ours-memory "$out/ours-memory.jsonl" $(printf -- '--peer %s ' "$out"/peer-*.json) \
  --title "$cpu, $isa_window window, $threads threads"
