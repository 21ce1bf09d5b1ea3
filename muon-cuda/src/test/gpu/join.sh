#!/usr/bin/env bash
# Receives, verifies, joins and unpacks the GPU test bundle that bundle.sh built: its core archive
# (muon-gpu-core.tar.xz) and the parts of its torch archive (muon-gpu-torch.tar.xz.part-NN), which may arrive one
# copy at a time.
#
#   join.sh add FILE...   check each file against SHA256SUMS (beside it) and keep it in the stash; prints what the
#                         stash holds and which parts are still missing
#   join.sh core DEST     check the core archive and unpack it into DEST (enough to run against the machine's own
#                         libtorch: run.sh finds it)
#   join.sh join DEST     the same, then check every torch part, join them, check the whole torch archive and unpack
#                         it into DEST too (libtorch's own GPU build)
#
# The stash is $MUON_GPU_STASH (default /tmp/muon-gpu-parts), outside any working tree, so that files sent by
# earlier copies survive later ones. Unpacks with xz (or Python's lzma where there is no xz) or zstd, by suffix.
# Exit status: 0 done, 1 a checksum or file is wrong or missing, 2 usage.
set -euo pipefail

stash=${MUON_GPU_STASH:-/tmp/muon-gpu-parts}
say() { printf 'join.sh: %s\n' "$*" >&2; }

# The expected sum of NAME in SUMS, or nothing.
sum_of() {
    awk -v n="$2" '$2 == n || $2 == "*" n {print $1; exit}' "$1"
}

# The names SUMS lists that travel (the core archive and the parts), in order; the whole torch archive does not.
travelling() {
    awk '$2 ~ /\.part-[0-9]+$/ || $2 ~ /^muon-gpu-core\.tar/ {print $2}' "$1" | sort
}

core_name() {
    awk '$2 ~ /^muon-gpu-core\.tar/ {print $2; exit}' "$1"
}

report() {
    local held=() missing=() name
    while IFS= read -r name; do
        if [[ -f "$stash/$name" ]]; then held+=("$name"); else missing+=("$name"); fi
    done < <(travelling "$stash/SHA256SUMS")
    say "stash $stash holds ${#held[@]} of $((${#held[@]} + ${#missing[@]})) files: ${held[*]:-none}"
    if [[ ${#missing[@]} -gt 0 ]]; then
        say "missing: ${missing[*]}"
    fi
}

# Checks FILE against SUMS; exits 1 naming it if it differs.
check() {
    local file=$1 sums=$2 name expected actual
    name=$(basename "$file")
    expected=$(sum_of "$sums" "$name")
    if [[ -z "$expected" ]]; then
        say "$sums lists no $name"
        exit 1
    fi
    actual=$(sha256sum "$file" | awk '{print $1}')
    if [[ "$actual" != "$expected" ]]; then
        say "$name: sha256 $actual, expected $expected (damaged in transfer; send it again)"
        exit 1
    fi
}

# Decompresses standard input by the suffix of NAME onto standard output.
decompress() {
    case "$1" in
        *.xz)
            if command -v xz >/dev/null 2>&1; then
                xz -d -T0 -c
            else
                python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer, 1 << 20)'
            fi
            ;;
        *.zst) zstd -q -d --long=31 -c ;;
        *.tar) cat ;;
        *) say "$1: unknown compression"; exit 1 ;;
    esac
}

add() {
    local file sums name
    mkdir -p "$stash"
    for file in "$@"; do
        name=$(basename "$file")
        sums="$(dirname "$file")/SHA256SUMS"
        [[ -f "$file" ]] || { say "no such file: $file"; exit 1; }
        [[ -f "$sums" ]] || { say "no SHA256SUMS beside $file; carry it with the file"; exit 1; }
        if [[ -f "$stash/SHA256SUMS" ]] && ! cmp -s "$sums" "$stash/SHA256SUMS"; then
            say "$sums differs from the stash's: the files come from another build; empty $stash first"
            exit 1
        fi
        check "$file" "$sums"
        cp "$sums" "$stash/SHA256SUMS"
        cp "$file" "$stash/$name.tmp"
        mv "$stash/$name.tmp" "$stash/$name"
        say "$name: sha256 ok"
    done
    report
}

unpack_core() {
    local dest=$1 core t0
    [[ -f "$stash/SHA256SUMS" ]] || { say "the stash $stash is empty: add the files first"; exit 1; }
    core=$(core_name "$stash/SHA256SUMS")
    [[ -f "$stash/$core" ]] || { report; exit 1; }
    check "$stash/$core" "$stash/SHA256SUMS"
    mkdir -p "$dest"
    t0=$(date +%s.%N)
    decompress "$core" < "$stash/$core" | tar -xf - -C "$dest"
    say "$core: sha256 ok, unpacked into $dest in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
}

join_torch() {
    local dest=$1 name archive expected actual t0
    local names=()
    mapfile -t names < <(awk '$2 ~ /\.part-[0-9]+$/ {print $2}' "$stash/SHA256SUMS" | sort)
    for name in "${names[@]}"; do
        if [[ ! -f "$stash/$name" ]]; then
            report
            exit 1
        fi
    done
    # Each part was checked when it was added; the sum of the whole archive checks the order and the joins.
    archive=${names[0]%.part-*}
    expected=$(sum_of "$stash/SHA256SUMS" "$archive")
    t0=$(date +%s.%N)
    actual=$( (cd "$stash" && cat "${names[@]}") | sha256sum | awk '{print $1}')
    if [[ "$actual" != "$expected" ]]; then
        say "$archive joined from ${#names[@]} parts: sha256 $actual, expected $expected"
        exit 1
    fi
    (cd "$stash" && cat "${names[@]}") | decompress "$archive" | tar -xf - -C "$dest"
    say "$archive: ${#names[@]} parts joined, sha256 ok, unpacked into $dest in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
}

case "${1:-}" in
    add)
        shift
        [[ $# -ge 1 ]] || { say "usage: join.sh add FILE..."; exit 2; }
        add "$@"
        ;;
    core)
        [[ $# -eq 2 ]] || { say "usage: join.sh core DEST"; exit 2; }
        unpack_core "$2"
        say "run $2/muon-gpu-bundle/gpu-checks.sh OUT (the machine's own libtorch: run.sh finds it)"
        ;;
    join)
        [[ $# -eq 2 ]] || { say "usage: join.sh join DEST"; exit 2; }
        [[ -f "$stash/SHA256SUMS" ]] || { say "the stash $stash is empty: add the files first"; exit 1; }
        # Check the parts before unpacking anything.
        while IFS= read -r name; do
            [[ -f "$stash/$name" ]] || { report; exit 1; }
        done < <(travelling "$stash/SHA256SUMS")
        [[ -x "$2/muon-gpu-bundle/run.sh" ]] || unpack_core "$2"
        join_torch "$2"
        say "run $2/muon-gpu-bundle/gpu-checks.sh OUT (libtorch's own GPU build from the bundle)"
        ;;
    *)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
