"""Runs every muon-cuda kernel once at edge-case shapes, for compute-sanitizer (memcheck, racecheck).

    compute-sanitizer --tool memcheck --kernel-name kns=muon_ python3 muon-cuda/src/test/python/sanitize_check.py OUT

Shapes are small and uneven: partial tiles, k shorter than one pipeline stage, batches, tall inputs.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check as g  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    k = g.Kernels(g.build(out))
    torch.manual_seed(3)
    for variant in ("mma", "wgmma"):
        for shape in [(8, 8), (136, 24), (264, 72), (3, 136, 40)]:
            p = torch.randn(*shape, device="cuda").bfloat16()
            m = shape[-2]
            c = torch.empty(*shape[:-1], m, device="cuda", dtype=torch.bfloat16)
            k.sym_gemm(p, c, variant=variant)
            s = c.clone()
            k.sym_gemm(s, c, alpha=2.0, beta=-1.0, s=s, diag=3.0, variant=variant)
    for shape in [(7, 5), (33, 65), (65, 33), (2, 40, 24)]:
        for dt in (torch.float32, torch.bfloat16):
            gg = torch.randn(*shape, device="cuda").to(dt)
            tall = shape[-2] > shape[-1]
            xs = shape[:-2] + ((shape[-1], shape[-2]) if tall else shape[-2:])
            x = torch.empty(*xs, device="cuda", dtype=torch.bfloat16)
            k.normalize(gg, x)
    n = 1000
    buf, grad = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    o = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    k.momentum_step(buf, grad, o, 0.9, True)
    k.param_update(buf, o, 0.99, -0.1)
    torch.cuda.synchronize()
    print("sanitize_check: all kernels ran")


if __name__ == "__main__":
    main()
