#!/usr/bin/env python3
"""The PyTorch-eager peer of muon-bench: the same Newton-Schulz and the same optimizer step, timed on this machine.

It implements the reference algorithm of muon-core/src/test/resources/golden/README.md in the textbook form
PyTorch's torch.optim.Muon uses (X / max(||X||, eps); A = X Xt; B = b A + c A A via addmm; X = a X + B X via
addmm), in float32 and in bfloat16, and a Muon + AdamW step over the GPT-2-small-width parameter set of
MuonStepBenchmark. Run with Debian's python3-torch and libopenblas0-pthread (the reference BLAS is ~40x slower):

    /usr/bin/python3 muon-bench/peer/pytorch_peer.py --threads 2 --out peer.json
"""
import argparse
import json
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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    results = {"torch": torch.__version__, "threads": torch.get_num_threads(),
               "blas": torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]
               if "BLAS_INFO=" in torch.__config__.show() else "unknown", "ns": {}, "step": {}}
    for shape in args.shapes.split(","):
        rows, cols = (int(v) for v in shape.split("x"))
        g = torch.randn(rows, cols)
        for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            med, lo, hi = median_ms(lambda: newton_schulz(g, dtype=dtype), args.repeats)
            results["ns"][f"{shape}/{name}"] = {"median_ms": med, "min_ms": lo, "max_ms": hi}
            print(f"NS {shape} {name}: median {med:.1f} ms (min {lo:.1f}, max {hi:.1f})", flush=True)
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
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
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
