#!/usr/bin/env bash
# Launcher of the GPU test bundle (built by bundle.sh, which copies this file into the bundle's root).
#
# Runs muon-cuda's tests, or any main class of the bundle's class path, with the bundle's own Java runtime (made by
# jlink) on a Linux x86-64 machine that has no Java and no Maven. Before a JVM starts, it finds the CUDA libraries
# that the natives link against (they are not in the bundle), prints which directory served each, and stops with one
# message listing what is missing: a JVM would otherwise die in the middle of loading libtorch.
#
# libtorch: where the bundle holds libtorch's own GPU build (join.sh join unpacked the torch archive), the JVM loads
# that; where it holds only the core (join.sh core), the JVM loads the machine's libtorch, from MUON_TORCH_LIB or else
# the torch/lib folder of python3's PyTorch, through bytedeco's JNI bindings of the bundle. `run.sh check` says which.
#
#   run.sh libs                       find the CUDA libraries only (no JVM)
#   run.sh env                        the same, then prints `export LD_LIBRARY_PATH=...` for a Maven run:
#                                     eval "$(muon-cuda/src/test/gpu/run.sh env)" && mvn -Pgpu ...
#   run.sh check                      java -version, which libtorch, the CUDA libraries; nothing else
#   run.sh symbols                    the symbols the natives need and the libtorch and CUDA found lack (ldd -r)
#   run.sh tests [--gpu-only] [ARGS]  the JUnit console over muon-cuda's test classes (ARGS go to the console,
#                                     e.g. --select-class dev.muon.cuda.CudaNewtonSchulzGpuTest)
#   run.sh main CLASS [ARGS]          java CLASS ARGS on the bundle's class path
#
# Environment:
#   MUON_CUDA_LIB_PATH     directories searched first, colon-separated
#   MUON_CUDA_LIBS_FILE    the list of libraries to find (default: the bundle's cuda-libs.txt; bundle.sh puts a
#                          copy beside the parts, so that `run.sh libs` can run before the bundle has arrived)
#   MUON_SITE_PACKAGES     Python site-packages directories (colon-separated) whose nvidia/*/lib hold CUDA wheels;
#                          default: asked of python3 (import nvidia), then the usual virtualenv and dist-packages globs
#   MUON_CUDA_LIB_SEARCH   "explicit": search only the two variables above (no CUDA install, ldconfig or python3)
#   MUON_TORCH_LIB         the machine's libtorch folder (holding libtorch_cpu.so), for a bundle without libtorch
#   MUON_SKIP_LIB_CHECK    1: report missing libraries but start the JVM anyway (a dry run on a machine with no
#                          GPU: the GPU tests then skip with CudaSupport's cause)
#   MUON_REPORTS           where the JUnit console writes its XML reports (default: $PWD/muon-gpu-reports)
#   MUON_JAVA_OPTS         JVM options (default -Xmx8g)
#   MUON_JAVACPP_DEBUG     1: JavaCPP logs every library it loads
# Exit status: the JUnit console's (0 all passed, 1 failures), the main class's, or 3 when a CUDA library or the
# machine's libtorch is missing, 4 when the Java runtime does not run.
set -euo pipefail

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
libs_file=${MUON_CUDA_LIBS_FILE:-$bundle/cuda-libs.txt}
java="$bundle/jre/bin/java"
natives="$bundle/natives"
bundled_torch="$natives/org/bytedeco/pytorch/linux-x86_64-gpu/libtorch_cpu.so"

say() { printf 'muon-gpu-bundle: %s\n' "$*" >&2; }

# The product behind a soname, for the message a user reads when it is missing.
product_of() {
    case "$1" in
        libcublasLt.*) echo "cuBLASLt" ;;
        libcublas.*) echo "cuBLAS" ;;
        libcudnn*) echo "cuDNN" ;;
        libnccl.*) echo "NCCL" ;;
        libcusparse.*) echo "cuSPARSE" ;;
        libcufft.*) echo "cuFFT" ;;
        libcurand.*) echo "cuRAND" ;;
        libcusolver*) echo "cuSOLVER" ;;
        libnvrtc*) echo "NVRTC" ;;
        libnvJitLink.*) echo "nvJitLink" ;;
        libcupti.*) echo "CUPTI" ;;
        libcufile*) echo "cuFile (GPUDirect Storage)" ;;
        libcudart.*) echo "CUDA runtime" ;;
        libcuda.so*) echo "NVIDIA driver" ;;
        libnvToolsExt.*) echo "NVTX" ;;
        *) echo "CUDA" ;;
    esac
}

check_java() {
    local version
    if [[ ! -x "$java" ]]; then
        say "no Java runtime at $java; rebuild the bundle with bundle.sh"
        exit 4
    fi
    if ! version=$("$java" -version 2>&1); then
        say "the bundle's Java runtime does not run ($java):"
        printf '%s\n' "$version" >&2
        exit 4
    fi
    say "java: $java"
    printf '%s\n' "$version" | sed 's/^/    /' >&2
}

# Directories that may hold the CUDA libraries, best first. A Python PyTorch for CUDA 13 keeps them in
# site-packages/nvidia/<package>/lib (cu13/lib for the CUDA 13 toolkit wheels); a CUDA install in lib64.
search_dirs() {
    local explicit=0 d sites=() entries=()
    [[ "${MUON_CUDA_LIB_SEARCH:-}" == explicit ]] && explicit=1
    IFS=: read -ra entries <<< "${MUON_CUDA_LIB_PATH:-}"
    for d in "${entries[@]}"; do
        [[ -n "$d" ]] && echo "$d"
    done
    if [[ -n "${MUON_SITE_PACKAGES:-}" ]]; then
        IFS=: read -ra entries <<< "$MUON_SITE_PACKAGES"
        for d in "${entries[@]}"; do
            [[ -n "$d" ]] && sites+=("$d/nvidia")
        done
    elif [[ $explicit -eq 0 ]]; then
        if command -v python3 >/dev/null 2>&1; then
            while IFS= read -r d; do
                [[ -n "$d" ]] && sites+=("$d")
            done < <(python3 -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null || true)
        fi
        for d in /opt/*/.venv/lib/python3*/site-packages/nvidia /opt/*/lib/python3*/site-packages/nvidia \
                 /usr/local/lib/python3*/dist-packages/nvidia /usr/local/lib/python3*/site-packages/nvidia \
                 /usr/lib/python3/dist-packages/nvidia "$HOME"/.local/lib/python3*/site-packages/nvidia; do
            [[ -d "$d" ]] && sites+=("$d")
        done
    fi
    for d in "${sites[@]}"; do
        ls -d "$d"/*/lib "$d"/*/lib64 2>/dev/null || true
    done
    [[ $explicit -eq 1 ]] && return
    for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13*; do
        [[ -n "$d" && -d "$d" ]] || continue
        echo "$d/lib64"
        echo "$d/lib"
        echo "$d/targets/x86_64-linux/lib"
    done
    echo /usr/local/nvidia/lib64
    echo /usr/local/nvidia/lib
    echo /usr/lib/x86_64-linux-gnu
    echo /usr/lib64
    echo /lib/x86_64-linux-gnu
    echo /usr/lib/wsl/lib
}

# Finds every library named in cuda-libs.txt, prints where each came from, exports LD_LIBRARY_PATH, and returns 3
# when a required one (or one they need in turn) is missing.
find_cuda_libs() {
    if [[ ! -f "$libs_file" ]]; then
        say "no $libs_file; rebuild the bundle with bundle.sh"
        exit 4
    fi
    local dirs=() d
    while IFS= read -r d; do
        [[ -d "$d" ]] && dirs+=("$(cd "$d" && pwd)")
    done < <(search_dirs)
    local ldconfig_cache=""
    if [[ "${MUON_CUDA_LIB_SEARCH:-}" != explicit ]] && command -v ldconfig >/dev/null 2>&1; then
        ldconfig_cache=$(ldconfig -p 2>/dev/null || true)
    fi

    local served=() missing=() missing_optional=() found_files=() driver_found=1
    local kind soname where real
    say "CUDA libraries (from $libs_file):"
    while read -r kind soname; do
        [[ -z "$kind" || "$kind" == \#* ]] && continue
        where=""
        for d in "${dirs[@]}"; do
            if [[ -e "$d/$soname" ]]; then
                where="$d"
                break
            fi
        done
        if [[ -z "$where" && -n "$ldconfig_cache" ]]; then
            where=$(printf '%s\n' "$ldconfig_cache" | awk -v s="$soname" '$1 == s && /x86-64/ && !found {print $NF; found = 1}')
            [[ -n "$where" ]] && where=$(dirname "$where")
        fi
        if [[ -n "$where" ]]; then
            # The file behind the soname carries the full version (libcudnn.so.9.13.0): a lead when libtorch, built
            # against CUDA 13.1 and cuDNN 9.19, meets older copies and fails on an undefined symbol.
            real=$(basename "$(readlink -f "$where/$soname")")
            printf '    %-42s %-10s <- %s%s\n' "$soname" "$kind" "$where" \
                "$([[ "$real" != "$soname" ]] && echo "  ($real)")" >&2
            served+=("$where")
            found_files+=("$where/$soname")
        else
            printf '    %-42s %-10s MISSING (%s)\n' "$soname" "$kind" "$(product_of "$soname")" >&2
            case "$kind" in
                required) missing+=("$soname") ;;
                driver) driver_found=0 ;;
                *) missing_optional+=("$soname") ;;
            esac
        fi
    done < "$libs_file"

    # In search order, so that the loader picks the same copy as the table above where several directories have one.
    local path="" s
    for s in "${dirs[@]}" "${served[@]}"; do
        case " ${served[*]} " in *" $s "*) ;; *) continue ;; esac
        case ":$path:" in *":$s:"*) ;; *) path="${path:+$path:}$s" ;; esac
    done
    export LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

    # What the found libraries need in turn (cuSPARSE and cuSOLVER need nvJitLink, cuDNN its sub-libraries).
    local f line dep
    if command -v ldd >/dev/null 2>&1; then
        for f in "${found_files[@]}"; do
            while IFS= read -r line; do
                dep=$(printf '%s\n' "$line" | awk '/=> not found/ {print $1}')
                # The driver's own libraries come with the GPU; without one, libtorch reports that instead.
                if [[ -n "$dep" && "$dep" != libcuda.so.* && "$dep" != libnvidia-* ]]; then
                    case " ${missing[*]} " in *" $dep "*) ;; *)
                        printf '    %-42s %-10s MISSING (%s, needed by %s)\n' "$dep" "required" \
                            "$(product_of "$dep")" "$(basename "$f")" >&2
                        missing+=("$dep") ;;
                    esac
                fi
            done < <(ldd "$f" 2>/dev/null || true)
        done
    fi

    say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    if [[ ${#missing_optional[@]} -gt 0 ]]; then
        say "optional libraries not found (loaded on demand; only some operations need them): ${missing_optional[*]}"
    fi
    if [[ $driver_found -eq 0 ]]; then
        say "no NVIDIA driver (libcuda.so.1) found: libtorch will see no GPU and the @Tag(\"gpu\") tests will skip"
    fi
    if [[ ${#missing[@]} -gt 0 ]]; then
        local list="" m
        for m in "${missing[@]}"; do
            list="$list $m ($(product_of "$m")),"
        done
        say "libtorch's CUDA build cannot load: these libraries are missing:${list%,}. Searched, in order:" \
            "${dirs[*]:-(no directory)}${ldconfig_cache:+ and the ldconfig cache}. Install the CUDA 13 toolkit" \
            "with cuDNN 9 and NCCL 2, or a PyTorch for CUDA 13 with its nvidia-* wheels, or name the directories" \
            "that hold them in MUON_CUDA_LIB_PATH=dir1:dir2"
        return 3
    fi
    say "all required CUDA libraries found"
}

# Which libtorch the JVM will load: the bundle's own GPU build if the torch archive was unpacked, else the machine's
# (MUON_TORCH_LIB, or the torch/lib folder of python3's PyTorch, found without importing it). Sets torch_lib to the
# machine's folder, or leaves it empty for the bundle's; returns 3 if neither is there.
torch_lib=""
find_torch() {
    if [[ -f "$bundled_torch" ]]; then
        say "libtorch: the bundle's own GPU build ($(dirname "$bundled_torch"))"
        return 0
    fi
    local dir=${MUON_TORCH_LIB:-}
    if [[ -z "$dir" ]] && command -v python3 >/dev/null 2>&1; then
        dir=$(python3 -c 'import importlib.util as u, os; s = u.find_spec("torch"); print(os.path.join(s.submodule_search_locations[0], "lib") if s else "")' 2>/dev/null || true)
    fi
    if [[ -z "$dir" || ! -f "$dir/libtorch_cpu.so" ]]; then
        say "libtorch: the bundle holds only its core (no libtorch), and no libtorch_cpu.so was found on this machine" \
            "(${dir:-python3 has no torch}); set MUON_TORCH_LIB to the folder that holds it, or unpack the torch" \
            "archive with join.sh join"
        return 3
    fi
    torch_lib=$(cd "$dir" && pwd)
    say "libtorch: the machine's, $torch_lib (bytedeco's JNI bindings of the bundle against it)"
}

class_path() {
    # natives/ holds the JNI libraries (and libtorch, if unpacked) at their resource paths: JavaCPP loads them from
    # there in place. No natives jar is on the class path.
    local cp="$bundle/classes/test:$natives" j
    for j in "$bundle"/lib/*.jar; do
        cp="$cp:$j"
    done
    echo "$cp"
}

jvm_options() {
    # Word splitting of MUON_JAVA_OPTS is wanted: it holds several options.
    # shellcheck disable=SC2206
    local opts=(${MUON_JAVA_OPTS:--Xmx8g})
    opts+=("-Dorg.bytedeco.javacpp.platform.extension=-gpu" "-Djavacpp.platform.extension=-gpu")
    # Only the directories found above: the JVM's default path holds /usr/lib/x86_64-linux-gnu, where a distribution's
    # own libtorch (Debian ships 1.13) would be picked up by JavaCPP's fallback whenever the bundle's libtorch.so
    # fails to load, and mixing the two crashes in the dispatcher's static initialisers (seen in a dry run).
    opts+=("-Djava.library.path=${LD_LIBRARY_PATH:-}")
    # What JavaCPP still copies (libopenblas under a second name) stays inside the bundle, not in ~/.javacpp.
    opts+=("-Dorg.bytedeco.javacpp.cachedir=$bundle/javacpp-cache")
    if [[ "${MUON_JAVACPP_DEBUG:-0}" == 1 ]]; then
        opts+=("-Dorg.bytedeco.javacpp.logger.debug=true")
    fi
    printf '%s\n' "${opts[@]}"
}

prepare() {
    check_java
    local status=0
    find_torch || status=$?
    if [[ $status -ne 0 ]]; then
        exit "$status"
    fi
    find_cuda_libs || status=$?
    if [[ -n "$torch_lib" ]]; then
        # First, so that the JNI bindings' libtorch_cpu.so, libc10.so, ... resolve to the machine's.
        export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    if [[ $status -ne 0 ]]; then
        if [[ "${MUON_SKIP_LIB_CHECK:-0}" == 1 ]]; then
            say "MUON_SKIP_LIB_CHECK=1: starting the JVM anyway"
        else
            exit "$status"
        fi
    fi
}

# The undefined symbols of the bundle's natives against the libtorch and CUDA libraries found: each listed one is a
# function that ends the JVM ("symbol lookup error") when something calls it (they are bound lazily, on first call).
# None is expected for libraries of the versions the natives were built for; the JNI bindings against another
# libtorch, or libtorch's GPU build against an older CUDA, show here first what they lack.
symbols() {
    local f report missing total=0
    command -v ldd >/dev/null 2>&1 || { say "ldd is needed"; exit 4; }
    for f in "$natives"/org/bytedeco/pytorch/linux-x86_64-gpu/lib*.so* "$natives"/org/bytedeco/cuda/linux-x86_64/lib*.so; do
        [[ -f "$f" ]] || continue
        # Only what the library itself references, with OpenBLAS where JavaCPP preloads it from in the JVM.
        report=$(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$natives/org/bytedeco/openblas/linux-x86_64" ldd -r "$f" 2>&1 \
            | awk -v f="($f)" 'index($0, "undefined symbol") == 1 && index($0, f) {sub(/,$/, "", $3); print $3}')
        missing=$(grep -c . <<< "$report" || true)
        total=$((total + missing))
        printf 'symbols: %s undefined=%s\n' "$(basename "$f")" "$missing"
        [[ -z "$report" ]] || awk 'NR <= 25' <<< "$report" | { command -v c++filt >/dev/null 2>&1 && c++filt || cat; } | sed 's/^/    /'
        LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$natives/org/bytedeco/openblas/linux-x86_64" ldd "$f" 2>/dev/null \
            | grep -E 'libtorch|libc10|not found' | sed 's/^[ \t]*/    linked: /' || true
    done
    printf 'symbols: total undefined=%s\n' "$total"
}

command=${1:-}
[[ $# -gt 0 ]] && shift
case "$command" in
    libs)
        find_cuda_libs
        ;;
    env)
        find_cuda_libs
        printf 'export LD_LIBRARY_PATH=%q\n' "$LD_LIBRARY_PATH"
        ;;
    check)
        prepare
        ;;
    symbols)
        prepare
        symbols
        ;;
    tests)
        prepare
        tags=()
        if [[ "${1:-}" == --gpu-only ]]; then
            tags=(--include-tag gpu)
            shift
        fi
        reports=${MUON_REPORTS:-$PWD/muon-gpu-reports}
        mkdir -p "$reports"
        mapfile -t opts < <(jvm_options)
        console=$(ls "$bundle"/junit/junit-platform-console-standalone-*.jar | head -n 1)
        # GpuBundleScriptsTest checks this launcher's source in the repository, which the bundle does not hold.
        selection=(--scan-class-path "$bundle/classes/test" --exclude-classname '.*GpuBundleScriptsTest')
        for a in "$@"; do
            # An explicit selection replaces the scan of every test class.
            [[ "$a" == --select* ]] && selection=()
        done
        say "starting the JUnit console (class path: the bundle's classes/test, natives/ and lib/*.jar)"
        exec "$java" "${opts[@]}" -jar "$console" execute --disable-banner --disable-ansi-colors --details=tree \
            --class-path "$(class_path)" "${selection[@]}" "${tags[@]}" --reports-dir "$reports" "$@"
        ;;
    main)
        if [[ $# -lt 1 ]]; then
            say "usage: run.sh main CLASS [ARGS...]"
            exit 2
        fi
        prepare
        mapfile -t opts < <(jvm_options)
        exec "$java" "${opts[@]}" -cp "$(class_path)" "$@"
        ;;
    *)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
