#!/usr/bin/env bash
# The GPU test bundle's whole sequence on a machine without a GPU, timed: what a GPU machine would run, copy by copy,
# with stand-ins for the CUDA libraries and the driver it lacks (stub-cuda.sh), so that every JVM goes as far as
# "libtorch sees no CUDA device". The numbers of docs/cuda.md's dry run come from here.
#
#   dry-run.sh PARTS WORK     PARTS: bundle.sh's parts folder; WORK: an empty folder for the stash, the unpacked
#                             bundle, the stand-ins and the checks' output (WORK/out-A, WORK/out-B)
#
# Environment: MUON_TORCH_LIB, a libtorch folder to stand in for the machine's own in the first copy (without it the
# first copy's probe finds none and says so); MUON_CUDA_LIB_PATH, folders of real CUDA libraries, searched before
# the stand-ins. Prints one line per step with its seconds, the checks' summaries, and the total.
set -euo pipefail

[[ $# -eq 2 ]] || { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
parts=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)
export MUON_GPU_STASH="$work/stash"
dest="$work/unpacked"
bundle="$dest/muon-gpu-bundle"
rm -rf "$MUON_GPU_STASH" "$dest" "$work/stubs" "$work/out-A" "$work/out-B"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }
step() { printf 'dry-run: %-58s %6s s\n' "$1" "$2"; }
started=$(now)

core=$(ls "$parts"/muon-gpu-core.tar.* | head -n 1)
mapfile -t torch < <(ls "$parts"/muon-gpu-torch.tar.*.part-* | sort)
echo "dry-run: $(basename "$core") $(stat -c %s "$core") bytes; ${#torch[@]} torch parts, $(cat "${torch[@]}" | wc -c) bytes"

# Copy 1: the core and torch part 00; unpack the core; the probe on the machine's libtorch.
t=$(now); bash "$here/join.sh" add "$core" "${torch[0]}" 2> "$work/copy-01.log"; step "copy 1: join.sh add core + part 00" "$(since "$t")"
t=$(now); bash "$here/join.sh" core "$dest" 2>> "$work/copy-01.log"; step "copy 1: join.sh core (check, unpack)" "$(since "$t")"
t=$(now); MUON_CUDA_LIB_PATH="${MUON_CUDA_LIB_PATH:-}" bash "$here/stub-cuda.sh" "$bundle" "$work/stubs" 2> "$work/stubs.log"; step "(dry run only) stand-ins for the missing CUDA libraries" "$(since "$t")"
export MUON_CUDA_LIB_PATH="${MUON_CUDA_LIB_PATH:+$MUON_CUDA_LIB_PATH:}$work/stubs"
t=$(now); "$bundle/gpu-checks.sh" --probe-first "$work/out-A" 2> "$work/out-A.log" || true
step "copy 1: gpu-checks.sh --probe-first (the machine's libtorch)" "$(since "$t")"
sed 's/^/    /' "$work/out-A/summary.tsv"

# Copies 2 .. N: one part each.
for ((i = 1; i < ${#torch[@]}; i++)); do
    t=$(now); bash "$here/join.sh" add "${torch[$i]}" 2> "$work/copy-$(printf %02d $((i + 1))).log"
    step "copy $((i + 1)): join.sh add $(basename "${torch[$i]}")" "$(since "$t")"
done

# The last copy: join, unpack libtorch, every check on the bundle's libtorch.
unset MUON_TORCH_LIB
t=$(now); bash "$here/join.sh" join "$dest" 2> "$work/join.log"; step "copy ${#torch[@]}: join.sh join (check the torch archive, unpack)" "$(since "$t")"
t=$(now); MUON_CUDA_LIB_PATH="${MUON_CUDA_LIB_PATH%"$work/stubs"}" bash "$here/stub-cuda.sh" "$bundle" "$work/stubs" 2>> "$work/stubs.log"
step "(dry run only) the stand-ins again, for libtorch's needs too" "$(since "$t")"
t=$(now); "$bundle/gpu-checks.sh" "$work/out-B" 2> "$work/out-B.log" || true
step "copy ${#torch[@]}: gpu-checks.sh (the bundle's libtorch)" "$(since "$t")"
sed 's/^/    /' "$work/out-B/summary.tsv"
echo "dry-run: unpacked $(du -sm "$dest" | cut -f1) MB; $(since "$started") s in all"
