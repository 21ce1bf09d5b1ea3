# Sourced by compare.sh and scale_curve.sh: the environment of the instruction-set window that $ISA names.
#   ISA unset or native: every library takes what this CPU runs.
#   ISA=avx2: both sides as on a CPU with AVX2 and FMA but no AVX-512, on this one:
#     ATEN_CPU_CAPABILITY=avx2    ATen's vectorised kernels (libtorch 2.10 and PyTorch 1.13)
#     ONEDNN_MAX_CPU_ISA=AVX2     oneDNN (both: libtorch 2.10 then leaves bfloat16 matmuls to ATen's GEMM)
#     OPENBLAS_CORETYPE=Haswell   OpenBLAS (bytedeco's in the JVM, Debian's under PyTorch)
#     -Ddev.muon.native.isa=avx2  muon-core's native kernels (isa_jvm_args: the JVM and JMH's forks)
#     --isa avx2                  pytorch_peer.py: oneDNN off, as PyTorch 1.13 runs bfloat16 matmuls without AVX-512
# isa_check.py verifies that each took effect; the scripts run it first and stop if one did not.
isa_window=${ISA:-native}
case "$isa_window" in
  native)
    isa_jvm_args=""
    ;;
  avx2)
    export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
    isa_jvm_args="-Ddev.muon.native.isa=avx2"
    ;;
  *)
    echo "ISA must be native or avx2, got '$isa_window'" >&2
    exit 2
    ;;
esac
