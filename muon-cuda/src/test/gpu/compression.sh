#!/usr/bin/env bash
# Measures how small each file of the GPU test bundle gets under xz and zstd at their strongest settings, and how
# long each takes to unpack: the numbers behind bundle.sh's choice of compressor (docs/cuda.md, "GPU test bundle for
# a machine without Java or Maven").
#
#   compression.sh FILE...        one line per file and method, tab-separated, on standard output:
#                                 file  bytes  method  compressed_bytes  ratio  compress_s  unpack_s
#
# Methods: xz -9, xz -9e (one thread, so that the sizes do not depend on the machine's cores), zstd --ultra -19
# --long, zstd --ultra -22 --long. Unpack times are of the whole file to /dev/null, best of MUON_UNPACK_RUNS
# (default 2). Needs xz and zstd; writes only under a temporary folder.
set -euo pipefail

runs=${MUON_UNPACK_RUNS:-2}
for tool in xz zstd; do
    command -v "$tool" >/dev/null 2>&1 || { echo "compression.sh: $tool is needed" >&2; exit 1; }
done
[[ $# -ge 1 ]] || { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b - a}'; }

# compress METHOD FILE OUT / unpack METHOD OUT
compress() {
    case "$1" in
        xz-9) xz -T1 -9 -c "$2" > "$3" ;;
        xz-9e) xz -T1 -9e -c "$2" > "$3" ;;
        zstd-19-long) zstd -q --ultra -19 --long -c "$2" > "$3" ;;
        zstd-22-long) zstd -q --ultra -22 --long -c "$2" > "$3" ;;
    esac
}
unpack() {
    case "$1" in
        xz-*) xz -d -c "$2" > /dev/null ;;
        zstd-*) zstd -q -d --long=31 -c "$2" > /dev/null ;;
    esac
}

printf 'file\tbytes\tmethod\tcompressed_bytes\tratio\tcompress_s\tunpack_s\n'
for file in "$@"; do
    size=$(stat -c %s "$file")
    for method in xz-9 xz-9e zstd-19-long zstd-22-long; do
        out="$work/$(basename "$file").$method"
        start=$(seconds)
        compress "$method" "$file" "$out"
        end=$(seconds)
        best=""
        for ((i = 0; i < runs; i++)); do
            u0=$(seconds)
            unpack "$method" "$out"
            u1=$(seconds)
            t=$(elapsed "$u0" "$u1")
            if [[ -z "$best" ]] || awk -v a="$t" -v b="$best" 'BEGIN {exit !(a < b)}'; then
                best=$t
            fi
        done
        packed=$(stat -c %s "$out")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$file")" "$size" "$method" "$packed" \
            "$(awk -v p="$packed" -v s="$size" 'BEGIN {printf "%.3f", p / s}')" "$(elapsed "$start" "$end")" "$best"
        rm -f "$out"
    done
done
