#!/usr/bin/env python3
"""The PyTorch-eager peer of muon-bench: the same Newton-Schulz and the same optimizer step, timed on this machine.

It implements the reference algorithm of muon-core/src/test/resources/golden/README.md in the textbook form
PyTorch's torch.optim.Muon uses (X / max(||X||, eps); A = X Xt; B = b A + c A A via addmm; X = a X + B X via
addmm), in float32 and in bfloat16, and a Muon + AdamW step over the GPT-2-small-width parameter set of
MuonStepBenchmark. Run with Debian's python3-torch and libopenblas0-pthread (the reference BLAS is ~40x slower):

    /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads 2 --out peer.json

--block D times the Muon step over one transformer block's matrices at width D instead (q, k, v, o of D x D and
the MLP's 4D x D and D x 4D, as MuonStepBenchmark's block-D sets), with the process's resident memory (the scale
curve, muon-bench/peer/scale_curve.sh). --isa avx2 runs as PyTorch 1.13 runs on a CPU without AVX-512 (see
isa_window); --probe prints what this process runs with (ATen's CPU capability, each OpenBLAS's core) and exits.
Every output JSON records the same under "capabilities".
"""
import argparse
import ctypes
import json
import re
import statistics
import time

import torch

A, B, C = 3.4445, -4.7750, 2.0315


def newton_schulz(g, steps=5, eps=1e-7, dtype=torch.float32):
    x = g.to(dtype)
    tall = g.size(0) > g.size(1)
    if tall:
        x = x.t()
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        a = x @ x.t()
        b = torch.addmm(a, a, a, beta=B, alpha=C)
        x = torch.addmm(x, b, x, beta=A)
    return x.t() if tall else x


def openblas_corenames():
    """openblas_get_corename() of every BLAS library this process mapped (Debian's libblas.so.3 is OpenBLAS)."""
    libraries = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if re.search(r"/lib(open)?blas[^/]*\.so", path):
                libraries.add(path)
    names = {}
    for path in sorted(libraries):
        try:
            corename = ctypes.CDLL(path).openblas_get_corename
            corename.restype = ctypes.c_char_p
            names[path] = corename().decode()
        except (OSError, AttributeError):
            names[path] = None  # not OpenBLAS
    return names


def capabilities():
    """What this process's products run on: ATen's CPU capability, oneDNN on or off, each OpenBLAS's core."""
    found = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return {"aten_capability": found.group(1) if found else "unknown",
            "mkldnn_enabled": torch.backends.mkldnn.enabled, "openblas": openblas_corenames()}


def isa_window(isa):
    """As PyTorch 1.13 runs on a CPU without AVX-512, for isa == "avx2" (the environment's ATEN_CPU_CAPABILITY,
    ONEDNN_MAX_CPU_ISA and OPENBLAS_CORETYPE do the rest): it calls oneDNN for bfloat16 matmuls only where cpuinfo
    reports AVX-512 BW, VL and DQ (mkldnn_bf16_device_check), and runs them on ATen's own GEMM elsewhere. Capped to
    AVX2 by ONEDNN_MAX_CPU_ISA, its oneDNN 2.6 has no bfloat16 matmul and fails ("could not create a primitive
    descriptor iterator"), so here oneDNN is turned off, which takes the AVX2 CPU's path."""
    if isa == "avx2":
        torch.backends.mkldnn.enabled = False


def resident_mib():
    """This process's resident and peak resident memory, MiB (Linux)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", float("nan")), fields.get("VmHWM", float("nan"))


def reset_peak():
    """Resets the kernel's high-water mark to the current resident size, as ResidentMemory does on our side."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def block(d):
    """One transformer block's matrices at width d (MuonStepBenchmark's block-D set), with gradients."""
    params = []
    for shape in [(d, d)] * 4 + [(4 * d, d), (d, 4 * d)]:
        p = (torch.randn(*shape) * 0.02).requires_grad_(True)
        p.grad = torch.randn(*shape) * 1e-3
        params.append(p)
    return params


def block_step(d, name, dtype, repeats):
    """The Muon step over block(d): median time, and resident memory before the optimizer, after its first step
    and at its peak (MiB)."""
    params = block(d)
    reset_peak()
    before, _ = resident_mib()
    muon = ReferenceMuon(params, dtype=dtype)
    muon.step()
    after, peak = resident_mib()
    med, lo, hi = median_ms(muon.step, repeats, warmup=1)
    print(f"Muon step, one block at width {d} {name}: median {med:.1f} ms (min {lo:.1f}, max {hi:.1f}); resident "
          f"MiB before {before:.0f}, after {after:.0f}, peak {peak:.0f}", flush=True)
    return {"median_ms": med, "min_ms": lo, "max_ms": hi, "before_mib": before, "after_mib": after,
            "peak_mib": peak}


def median_ms(fn, repeats, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times), max(times)


def gpt2_small_width():
    d, layers, vocab, context = 768, 4, 8192, 1024
    hidden, rest = [], []

    def param(*shape):
        p = (torch.randn(*shape) * 0.02).requires_grad_(True)
        p.grad = torch.randn(*shape) * 1e-3
        return p

    rest += [param(vocab, d), param(context, d)]
    for _ in range(layers):
        for _ in range(4):
            hidden.append(param(d, d))
            rest.append(param(d))
        hidden.append(param(4 * d, d))
        rest.append(param(4 * d))
        hidden.append(param(d, 4 * d))
        rest.append(param(d))
        rest += [param(d) for _ in range(4)]
    rest.append(param(vocab, d))
    return hidden, rest


class ReferenceMuon:
    """The golden README's Muon step, eager PyTorch, one buffer per parameter."""

    def __init__(self, params, lr=0.02, weight_decay=0.1, momentum=0.95, dtype=torch.float32):
        self.params, self.lr, self.wd, self.mu, self.dtype = params, lr, weight_decay, momentum, dtype
        self.buffers = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self):
        for p, buf in zip(self.params, self.buffers):
            g = p.grad
            buf.lerp_(g, 1 - self.mu)
            u = g.lerp(buf, self.mu)
            o = newton_schulz(u, dtype=self.dtype)
            ratio = max(1.0, p.size(0) / p.size(1)) ** 0.5
            p.mul_(1 - self.lr * self.wd)
            p.add_(o.to(p.dtype), alpha=-self.lr * ratio)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--shapes", default="1024x4096")
    parser.add_argument("--out", default=None)
    parser.add_argument("--isa", choices=("native", "avx2"), default="native",
                        help="avx2: as on a CPU without AVX-512 (with compare.sh's ISA=avx2 environment)")
    parser.add_argument("--probe", action="store_true", help="print the capabilities after a few products, exit")
    parser.add_argument("--block", type=int, default=None, help="time one transformer block's Muon step at this width")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default=None, help="one dtype only (NS, step and --block)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed Newton-Schulz runs before the timed ones")
    parser.add_argument("--no-step", action="store_true",
                        help="Newton-Schulz at --shapes only, without the GPT-2 step (which takes minutes per step "
                             "in bfloat16 on ATen's reference GEMM, the AVX2 window)")
    args = parser.parse_args()
    isa_window(args.isa)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dtypes = [(name, dtype) for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16))
              if args.dtype in (None, name)]
    if args.probe:
        # 512: large enough for oneDNN to be called where it would be (ONEDNN_VERBOSE=1 then prints it).
        for _, dtype in dtypes:
            x = torch.randn(512, 512).to(dtype)
            torch.addmm(x, x, x.t(), beta=0.5, alpha=2.0)
        print(json.dumps({"torch": torch.__version__, "capabilities": capabilities()}), flush=True)
        return
    results = {"torch": torch.__version__, "threads": torch.get_num_threads(),
               "blas": torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]
               if "BLAS_INFO=" in torch.__config__.show() else "unknown", "isa": args.isa, "ns": {}, "step": {}}
    if args.block is not None:
        results["block"] = {f"{args.block}/{name}": block_step(args.block, name, dtype, args.repeats)
                            for name, dtype in dtypes}
        finish(results, args.out)
        return
    for shape in args.shapes.split(","):
        rows, cols = (int(v) for v in shape.split("x"))
        g = torch.randn(rows, cols)
        for name, dtype in dtypes:
            med, lo, hi = median_ms(lambda: newton_schulz(g, dtype=dtype), args.repeats, warmup=args.warmup)
            results["ns"][f"{shape}/{name}"] = {"median_ms": med, "min_ms": lo, "max_ms": hi}
            print(f"NS {shape} {name}: median {med:.1f} ms (min {lo:.1f}, max {hi:.1f})", flush=True)
    for name, dtype in dtypes if not args.no_step else ():
        hidden, rest = gpt2_small_width()
        muon = ReferenceMuon(hidden, dtype=dtype)
        adamw = torch.optim.AdamW(rest, lr=1e-3)

        def step():
            muon.step()
            adamw.step()

        med, lo, hi = median_ms(step, args.repeats)
        results["step"][name] = {"median_ms": med, "min_ms": lo, "max_ms": hi}
        print(f"Muon+AdamW step (GPT-2-small width) {name}: median {med:.1f} ms (min {lo:.1f}, max {hi:.1f})",
              flush=True)
    finish(results, args.out)


def finish(results, out):
    """Adds what the products ran on (after they ran: every library is mapped then) and writes the JSON."""
    results["capabilities"] = capabilities()
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
