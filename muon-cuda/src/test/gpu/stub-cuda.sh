#!/usr/bin/env bash
# For a dry run of the GPU test bundle on a machine without a GPU: builds stand-ins for the CUDA libraries (and the
# driver's libcuda.so.1) that the bundle's natives link against and this machine lacks, so that the JVM loads
# libtorch's whole GPU build from the bundle and goes on until CUDA itself says there is no device. Never for a
# machine with a GPU: each stand-in only has the name, the symbol versions and the functions the natives ask for,
# and every function returns 100 (CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice).
#
#   stub-cuda.sh BUNDLE OUT     BUNDLE: an unpacked muon-gpu-bundle; OUT: where the stand-ins go. Then
#                               MUON_CUDA_LIB_PATH=OUT:<the real CUDA runtime's folder> BUNDLE/run.sh ...
#
# A library that exists on this machine (found by run.sh libs) gets no stand-in, so the real CUDA runtime, where
# there is one, is what the natives bind to. With MUON_TORCH_LIB (a libtorch standing in for the machine's), what it
# defines is not stood in for. Run it again once libtorch is unpacked: the stand-ins then cover what it needs too.
# Needs gcc, readelf, nm.
set -euo pipefail

[[ $# -eq 2 ]] || { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
bundle=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { printf 'stub-cuda.sh: %s\n' "$*" >&2; }

# The libraries run.sh finds here, and those it does not.
# (run.sh libs exits 3 when some are missing, which is the point here.)
present=$( (MUON_CUDA_LIB_PATH="${MUON_CUDA_LIB_PATH:-}" "$bundle/run.sh" libs 2>&1 || true) \
    | awk '$2 ~ /^(required|driver|optional)$/ && $3 == "<-" {print $1}')
missing=$(grep -E '^(required|driver) ' "$bundle/cuda-libs.txt" | awk '{print $2}' | grep -vxFf <(echo "$present") || true)

# Every undefined dynamic symbol of the natives: NAME@VERSION where the library versions its symbols.
find "$bundle/natives" -type f -name '*.so*' -exec readelf --dyn-syms -W {} \; \
    | awk '$7 == "UND" && $8 != "" {print $4, $8}' | sed 's/ (.*//' | sort -u > "$work/undefined"
# Every symbol defined by the natives themselves and by the libraries of this machine they would bind to.
{
    find "$bundle/natives" ${MUON_TORCH_LIB:+"$MUON_TORCH_LIB"/} -name '*.so*' -exec nm -D --defined-only {} \; 2>/dev/null
    for soname in $present libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1; do
        # awk reads to the end (no exit): a writer cut off by an early exit dies of SIGPIPE, which pipefail and
        # set -e turn into the script's end.
        path=$(ldconfig -p | awk -v s="$soname" '$1 == s && !found {print $NF; found = 1}')
        [[ -z "$path" ]] && path=$( (MUON_CUDA_LIB_PATH="${MUON_CUDA_LIB_PATH:-}" "$bundle/run.sh" libs 2>&1 || true) \
            | awk -v s="$soname" '$1 == s && $3 == "<-" && !found {print $4 "/" s; found = 1}')
        [[ -n "$path" ]] && nm -D --defined-only "$path" 2>/dev/null || true
    done
} | awk '{print $3}' | sed 's/@.*//' | sort -u > "$work/defined"

for soname in $missing; do
    # Versioned references name their library; unversioned ones that nothing here defines go to every stand-in whose
    # library versions nothing (the driver API, NCCL, cuRAND, cuFile): a duplicate definition is harmless, and each
    # native then finds them among its own dependencies, as ldd -r looks for them.
    {
        awk -v v="$soname" '{n = split($2, p, "@"); if (p[n] == v) print $1, p[1]}' "$work/undefined"
        if ! awk -v v="$soname" '{n = split($2, p, "@"); if (n > 1 && p[n] == v) found = 1} END {exit !found}' \
                "$work/undefined"; then
            awk 'index($2, "@") == 0 {print $1, $2}' "$work/undefined" | grep -v -wFf "$work/defined" \
                | grep -v -E ' (_ITM_|__gmon_start__|__cxa_finalize|_Jv_)' || true
        fi
    } | sort -u > "$work/$soname.syms"
    {
        echo "/* stand-in for $soname: every function returns CUDA_ERROR_NO_DEVICE */"
        awk '$1 == "OBJECT" {print "char " $2 "[256];"; next} {print "int " $2 "(void) { return 100; }"}' \
            "$work/$soname.syms"
    } > "$work/$soname.c"
    if grep -q '@' <(awk -v v="$soname" '{n = split($2, p, "@"); if (p[n] == v) print}' "$work/undefined"); then
        { echo "$soname {"; echo "  global: *;"; echo "};"; } > "$work/$soname.map"
        version=(-Wl,--version-script="$work/$soname.map")
    else
        version=()
    fi
    gcc -shared -fPIC -w -o "$out/$soname" -Wl,-soname,"$soname" "${version[@]}" "$work/$soname.c"
    say "$soname: $(wc -l < "$work/$soname.syms") functions"
done
say "stand-ins in $out; run with MUON_CUDA_LIB_PATH=$out${MUON_CUDA_LIB_PATH:+:$MUON_CUDA_LIB_PATH}"
