#!/usr/bin/env bash
# Receives, verifies and joins the parts of the GPU test bundle (bundle.sh splits it so that each part fits in
# one transfer).
#
#   join.sh add PART...   check each part against SHA256SUMS (beside the part) and keep it in the stash;
#                         prints which parts the stash holds and which are still missing
#   join.sh join DEST     check every part, join them, check the whole archive, unpack it into DEST
#
# The stash is $MUON_GPU_STASH (default /tmp/muon-gpu-parts), outside any working tree, so that parts sent by
# earlier calls survive later ones. Exit status: 0 done, 1 a checksum or part is wrong or missing, 2 usage.
set -euo pipefail

stash=${MUON_GPU_STASH:-/tmp/muon-gpu-parts}
say() { printf 'join.sh: %s\n' "$*" >&2; }

# Prints the expected sum of NAME in SUMS, or nothing.
sum_of() {
    awk -v n="$2" '$2 == n || $2 == "*" n {print $1; exit}' "$1"
}

# The part names SUMS lists, in order.
part_names() {
    awk '$2 ~ /\.part-[0-9]+$/ {print $2}' "$1" | sort
}

report() {
    local held=() missing=() name
    while IFS= read -r name; do
        if [[ -f "$stash/$name" ]]; then held+=("${name##*.part-}"); else missing+=("${name##*.part-}"); fi
    done < <(part_names "$stash/SHA256SUMS")
    say "stash $stash holds parts: ${held[*]:-none} (${#held[@]} of $((${#held[@]} + ${#missing[@]})))"
    if [[ ${#missing[@]} -gt 0 ]]; then
        say "missing parts: ${missing[*]}"
    fi
}

add() {
    local part sums expected actual name
    mkdir -p "$stash"
    for part in "$@"; do
        name=$(basename "$part")
        sums="$(dirname "$part")/SHA256SUMS"
        if [[ ! -f "$part" ]]; then
            say "no such part: $part"
            exit 1
        fi
        if [[ ! -f "$sums" ]]; then
            say "no SHA256SUMS beside $part; carry it with the part"
            exit 1
        fi
        expected=$(sum_of "$sums" "$name")
        if [[ -z "$expected" ]]; then
            say "$sums lists no $name"
            exit 1
        fi
        if [[ -f "$stash/SHA256SUMS" ]] && ! cmp -s "$sums" "$stash/SHA256SUMS"; then
            say "$sums differs from the stash's: the parts come from another build; empty $stash first"
            exit 1
        fi
        actual=$(sha256sum "$part" | awk '{print $1}')
        if [[ "$actual" != "$expected" ]]; then
            say "$name: sha256 $actual, expected $expected (damaged in transfer; send it again)"
            exit 1
        fi
        cp "$sums" "$stash/SHA256SUMS"
        cp "$part" "$stash/$name.tmp"
        mv "$stash/$name.tmp" "$stash/$name"
        say "$name: sha256 ok"
    done
    report
}

join_parts() {
    local dest=$1 name expected actual archive
    if [[ ! -f "$stash/SHA256SUMS" ]]; then
        say "the stash $stash is empty: add the parts first"
        exit 1
    fi
    local names=()
    mapfile -t names < <(part_names "$stash/SHA256SUMS")
    for name in "${names[@]}"; do
        if [[ ! -f "$stash/$name" ]]; then
            report
            exit 1
        fi
        expected=$(sum_of "$stash/SHA256SUMS" "$name")
        actual=$(sha256sum "$stash/$name" | awk '{print $1}')
        if [[ "$actual" != "$expected" ]]; then
            say "$name: sha256 $actual, expected $expected"
            exit 1
        fi
    done
    archive=$(awk '$2 ~ /\.tar$/ {print $2; exit}' "$stash/SHA256SUMS")
    mkdir -p "$dest"
    (cd "$stash" && cat "${names[@]}") > "$dest/$archive"
    expected=$(sum_of "$stash/SHA256SUMS" "$archive")
    actual=$(sha256sum "$dest/$archive" | awk '{print $1}')
    if [[ "$actual" != "$expected" ]]; then
        say "$archive joined from ${#names[@]} parts: sha256 $actual, expected $expected"
        exit 1
    fi
    say "$archive: ${#names[@]} parts joined, sha256 ok"
    tar -xf "$dest/$archive" -C "$dest"
    rm "$dest/$archive"
    say "unpacked: run $dest/muon-gpu-bundle/run.sh tests"
}

case "${1:-}" in
    add)
        shift
        [[ $# -ge 1 ]] || { say "usage: join.sh add PART..."; exit 2; }
        add "$@"
        ;;
    join)
        [[ $# -eq 2 ]] || { say "usage: join.sh join DEST"; exit 2; }
        join_parts "$2"
        ;;
    *)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
