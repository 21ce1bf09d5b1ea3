#!/usr/bin/env python3
"""Shows, and for a capped window verifies, which instruction sets both sides of compare.sh run on.

Usage: isa_check.py [--isa avx2] [--jar muon-bench/target/benchmarks.jar], in the environment the benchmarks get
(compare.sh sources isa_env.sh first). For each side it runs a probe with ONEDNN_VERBOSE=1 and reports:
  ours: muon-core's native kernel variant (NativeKernels.variant(), via dev.muon.bench.CpuCapabilities), libtorch
        2.10's ATen CPU capability, openblas_get_corename() of every OpenBLAS the JVM mapped (asked here through
        ctypes, in this environment: the bindings expose no such call), and the oneDNN primitives its products ran;
  peer: PyTorch 1.13's ATen CPU capability, openblas_get_corename() of Debian's OpenBLAS, oneDNN on or off and the
        primitives it ran (pytorch_peer.py --probe).
With --isa avx2 every one must say AVX2 (muon-core avx2, ATen AVX2, OpenBLAS Haswell, no oneDNN primitive above
AVX2); otherwise it exits with status 1, naming each that did not take effect.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def onednn_lines(output):
    """The oneDNN ISA line and the implementations of the primitives executed, from ONEDNN_VERBOSE output."""
    isa = None
    implementations = []
    for line in output.splitlines():
        if not line.startswith("onednn_verbose"):
            continue
        found = re.search(r",isa:(.*)$", line)
        if found:
            isa = found.group(1).strip()
        executed = re.search(r",exec,cpu,([^,]+),([^,]+),", line)
        if executed:
            implementations.append(f"{executed.group(1)} {executed.group(2)}")
    return isa, implementations


def corename(path):
    """openblas_get_corename() of the library at path, in this process's environment (OPENBLAS_CORETYPE)."""
    try:
        call = ctypes.CDLL(path).openblas_get_corename
        call.restype = ctypes.c_char_p
        return call().decode()
    except (OSError, AttributeError) as e:
        return f"unknown ({e})"


def run(command, env):
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--isa", choices=("native", "avx2"), default="native")
    parser.add_argument("--jar", default="muon-bench/target/benchmarks.jar")
    args = parser.parse_args()
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    property_args = [] if args.isa == "native" else [f"-Ddev.muon.native.isa={args.isa}"]
    ours = run(["java", *property_args, "-cp", args.jar, "dev.muon.bench.CpuCapabilities"], env)
    fields = {}
    libraries = []
    for line in ours.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key == "openblas.library":
            libraries.append(value.strip())
        elif sep and key in ("cpu", "muon.native", "aten.capability"):
            fields[key] = value.strip()
    our_isa, our_primitives = onednn_lines(ours)
    peer_output = run([sys.executable, os.path.join(HERE, "pytorch_peer.py"), "--probe", "--isa", args.isa], env)
    peer = json.loads([l for l in peer_output.splitlines() if l.startswith("{")][-1])
    peer_isa, peer_primitives = onednn_lines(peer_output)
    caps = peer["capabilities"]

    rows = [("ours", "muon-core native kernels", fields.get("muon.native", "?"),
             fields.get("muon.native", "").startswith("avx2")),
            ("ours", "libtorch 2.10 ATen CPU capability", fields.get("aten.capability", "?"),
             fields.get("aten.capability") == "AVX2")]
    for path in libraries:
        name = corename(path)
        rows.append(("ours", f"OpenBLAS {path}", name, name == "Haswell"))
    rows.append(("ours", "oneDNN (libtorch's bfloat16 matmul)", describe(our_isa, our_primitives),
                 not above_avx2(our_primitives)))
    rows.append(("peer", f"PyTorch {peer['torch']} ATen CPU capability", caps["aten_capability"],
                 caps["aten_capability"] == "AVX2"))
    for path, name in caps["openblas"].items():
        if name is not None:
            rows.append(("peer", f"OpenBLAS {path}", name, name == "Haswell"))
    rows.append(("peer", "oneDNN (" + ("on" if caps["mkldnn_enabled"] else "off: ATen's bfloat16 GEMM") + ")",
                 describe(peer_isa, peer_primitives), not above_avx2(peer_primitives)))

    print(f"== CPU: {fields.get('cpu', '?')}; window: {args.isa}")
    failed = []
    for side, what, value, ok in rows:
        verdict = "" if args.isa == "native" else ("ok" if ok else "NOT AVX2")
        print(f"{side:<5} {what:<100} {value:<40} {verdict}")
        if args.isa != "native" and not ok:
            failed.append(f"{side} {what}: {value}")
    if failed:
        sys.exit("the AVX2 window did not take effect for: " + "; ".join(failed))


def describe(isa, primitives):
    if not primitives:
        return "no primitive called"
    return ", ".join(sorted(set(primitives))) + (f" (isa: {isa})" if isa else "")


def above_avx2(primitives):
    return any(re.search(r"avx512|amx|avx10", p) for p in primitives)


if __name__ == "__main__":
    main()
