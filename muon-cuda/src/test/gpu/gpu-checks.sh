#!/usr/bin/env bash
# The GPU checks of the GPU test bundle, in the order users need their answers, each with its own time limit, each
# writing its results under OUT as soon as it ends, so that a run cut short still leaves what finished.
#
#   gpu-checks.sh [--probe-first] OUT
#
#   0-machine    nvidia-smi, the Java runtime, which libtorch, the CUDA libraries (run.sh check), and the symbols
#                the JNI bindings lack in that libtorch (run.sh symbols)
#   a-probe      the JVM loads libtorch's CUDA build and CudaSupport reports the GPU available; a CUDA product, one
#                Newton-Schulz call through the kernels and one Muon step with the fused update (GpuProbe)
#   b-gpu-suite  every @Tag("gpu") test of muon-cuda but those of c, d, f and g, with JUnit XML
#   c-golden     every golden case through Muon and MuonAdamW on CUDA, float32 and bfloat16 Newton-Schulz, fused
#                update on and off (CudaGoldenGpuTest)
#   d-training   AdamW against MuonAdamW on an MLP, loss against steps and seconds (CudaTrainingGpuTest, training.csv)
#   e-timings    host time per NS call against its GPU time, and a GPT-2-small-width Muon step with and without the
#                fused update (GpuTimings, timings.json)
#   f-gloo       W = 2 over Gloo with CUDA tensors, one JVM per rank (CudaGlooGpuTest)
#   g-offload    Muon's state in pinned host memory, bit for bit against the state on the device, and its step-time
#                table for docs/benchmarks.md (HostMemoryStateGpuTest)
#
# --probe-first: stop after a-probe unless it passed (exit 0), for a first try against the machine's own libtorch.
# OUT/summary.tsv gets one line per check when it ends: check, exit status, seconds, what it means. Each check's
# output is OUT/<check>.log; JUnit's XML reports go to OUT/<check>/. A check whose time limit does not fit in what is
# left of MUON_GPU_BUDGET_S (default 480) is skipped and named. Environment as run.sh's (MUON_SKIP_LIB_CHECK=1 for a
# dry run on a machine without a GPU). Exit status: 0 when every check that ran passed or found no GPU, else 1.
set -uo pipefail

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
probe_first=0
if [[ "${1:-}" == --probe-first ]]; then
    probe_first=1
    shift
fi
[[ $# -eq 1 ]] || { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
budget=${MUON_GPU_BUDGET_S:-480}
started=$(date +%s)
failed=0
run_sh="$bundle/run.sh"
summary="$out/summary.tsv"
[[ -f "$summary" ]] || printf 'check\texit\tseconds\tresult\n' > "$summary"

say() { printf 'gpu-checks.sh: %s\n' "$*" >&2; }

# check NAME LIMIT_S COMMAND...: runs COMMAND with its output in OUT/NAME.log, under LIMIT_S; records the outcome.
check() {
    local name=$1 limit=$2 status t0 seconds result left
    shift 2
    left=$((budget - ($(date +%s) - started)))
    if ((limit > left)); then
        printf '%s\t-\t0\tskipped: %s s left of the budget, the check may take %s s\n' "$name" "$left" "$limit" \
            >> "$summary"
        say "$name skipped ($left s left, it may take $limit s)"
        return 0
    fi
    say "$name (at most $limit s)"
    t0=$(date +%s.%N)
    (cd "$out" && timeout -k 10 "$limit" "$@") > "$out/$name.log" 2>&1
    status=$?
    seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    case "$status" in
        0) result="passed" ;;
        2) result="no GPU (see the log)" ;;
        3) result="CUDA libraries or libtorch missing (see the log)" ;;
        124|137) result="TIMED OUT after $limit s"; failed=1 ;;
        134|139) result="JVM CRASHED (signal $((status - 128)); hs_err file copied if any)"; failed=1 ;;
        *) result="FAILED"; failed=1 ;;
    esac
    # The JUnit console's counts ("aborted" is its word for a skip: a failed assumption, such as no GPU).
    if grep -q 'tests found' "$out/$name.log"; then
        local ran skipped
        ran=$(awk '/tests successful/ {print $2}' "$out/$name.log")
        skipped=$(awk '/tests aborted/ {print $2}' "$out/$name.log")
        if [[ "$status" == 0 && "$ran" == 0 && "$skipped" != 0 ]]; then
            result="all skipped (no GPU: see the log)"
        fi
        result="$result ($(awk '/tests (successful|failed|aborted)/ {gsub(/[\[\]]/, ""); printf "%s%s %s", sep, $1, $3; sep=", "}' "$out/$name.log" | sed 's/aborted/skipped/'))"
    fi
    # A JVM that crashed leaves hs_err_pid*.log in its working folder, which is OUT.
    printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$seconds" "$result" >> "$summary"
    say "$name: $result ($seconds s)"
    return "$status"
}

# junit NAME LIMIT_S CONSOLE_ARGS...: the JUnit console with its XML reports in OUT/NAME/.
junit() {
    local name=$1 limit=$2
    shift 2
    mkdir -p "$out/$name"
    MUON_REPORTS="$out/$name" check "$name" "$limit" "$run_sh" tests "$@"
}

check 0-machine 60 bash -c "(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || echo 'nvidia-smi: none'); '$run_sh' check && '$run_sh' symbols"
machine=$?
if ((machine == 3)) && [[ "${MUON_SKIP_LIB_CHECK:-0}" != 1 ]]; then
    say "stopping: libraries are missing (0-machine.log)"
    exit 1
fi

check a-probe 120 "$run_sh" main dev.muon.cuda.GpuProbe
probe=$?
if ((probe_first == 1 && probe != 0)); then
    say "stopping after a-probe (exit $probe): --probe-first"
    exit 1
fi

separately=(--exclude-classname '.*CudaGoldenGpuTest' --exclude-classname '.*CudaTrainingGpuTest'
            --exclude-classname '.*CudaGlooGpuTest' --exclude-classname '.*HostMemoryStateGpuTest')
junit b-gpu-suite 180 --gpu-only "${separately[@]}"
junit c-golden 150 --select-class dev.muon.cuda.CudaGoldenGpuTest
MUON_JAVA_OPTS="${MUON_JAVA_OPTS:--Xmx8g} -Dmuon.gpu.out=$out/d-training" \
    junit d-training 150 --select-class dev.muon.cuda.CudaTrainingGpuTest
MUON_JAVA_OPTS="${MUON_JAVA_OPTS:--Xmx8g} -Dmuon.gpu.out=$out/e-timings" \
    check e-timings 180 "$run_sh" main dev.muon.cuda.GpuTimings
junit f-gloo 150 --select-class dev.muon.cuda.CudaGlooGpuTest
# Last: the offloaded state is the newest path, and its answers matter once the ones above are known.
junit g-offload 120 --select-class dev.muon.cuda.HostMemoryStateGpuTest

say "done in $(($(date +%s) - started)) s; $summary:"
column -t -s $'\t' "$summary" >&2 2>/dev/null || cat "$summary" >&2
exit "$failed"
