"""Correctness and timing of the muon-cuda kernels on a GPU, without Java.

Builds the two CUDA sources with the flags of muon-cuda/pom.xml, loads the fatbins with CuPy (the same
cuModuleLoadData path the Java launcher takes), launches them on PyTorch tensors on torch's current stream,
checks each against a float64 torch reference (relative Frobenius error, outputs poisoned with NaN first,
fresh random inputs), then times them against libtorch's ops with CUDA events (median of many runs, L2
flushed between runs by triton.testing.do_bench).

Run on the GPU machine from the repository root:
    python3 muon-cuda/src/test/python/gpu_check.py --out RESULTS_DIR              # checks, then the timing tables
    python3 muon-cuda/src/test/python/gpu_check.py --out RESULTS_DIR --skip-timing
    python3 muon-cuda/src/test/python/gpu_check.py --out RESULTS_DIR --extras     # addmm baseline, stage sweep
"""

import argparse
import json
import math
import os
import subprocess
import sys
import warnings

import cupy
import numpy as np
import torch
import triton.testing

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "main", "cuda"))
# Same -gencode list as muon-cuda/pom.xml (property nvcc.gencode).
GENCODE = ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
           "-gencode", "arch=compute_90,code=compute_90"]
GENCODE_SM90A = ["-gencode", "arch=compute_90a,code=sm_90a"]
SM90_SMEM = 5 * 2 * 128 * 64 * 2 + 1024  # MUON_SM90_STAGES = 5
KJ = (3.4445, -4.7750, 2.0315)
BM = 128


def build(out_dir):
    mods = {}
    for name in ("ns_symmetric", "ns_elementwise", "ns_symmetric_sm90"):
        fatbin = os.path.join(out_dir, name + ".fatbin")
        gencode = GENCODE_SM90A if name.endswith("sm90") else GENCODE
        cmd = ["nvcc", "-O3", "-std=c++17", "--resource-usage", *gencode, "-fatbin", "-o", fatbin,
               os.path.join(CUDA_DIR, name + ".cu")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        log = r.stdout + r.stderr
        with open(os.path.join(out_dir, "nvcc.log"), "a") as f:
            f.write(" ".join(cmd) + "\n" + log + "\n")
        if r.returncode != 0:
            print(log)
            sys.exit("nvcc failed for " + name)
        with open(fatbin, "rb") as f:
            # cuModuleLoadData on the bytes, as CudaKernels does with the class-path resource.
            mods[name] = cupy.RawModule(path=fatbin)
    return mods


class Kernels:
    def __init__(self, mods):
        s = mods["ns_symmetric"]
        e = mods["ns_elementwise"]
        self.sym = s.get_function("muon_sym_gemm_bf16")
        self.sym90 = mods["ns_symmetric_sm90"].get_function("muon_sym_gemm_bf16_sm90")
        try:
            self.sym90.max_dynamic_shared_size_bytes = SM90_SMEM
        except AttributeError:
            cupy.cuda.driver.funcSetAttribute(self.sym90.ptr, 8, SM90_SMEM)  # 8: MAX_DYNAMIC_SHARED_SIZE_BYTES
        self.variant = "mma"
        self.sumsq = {torch.float32: e.get_function("muon_sumsq_f32"), torch.bfloat16: e.get_function("muon_sumsq_bf16")}
        self.scale = {torch.float32: e.get_function("muon_scale_cast_f32"),
                      torch.bfloat16: e.get_function("muon_scale_cast_bf16")}
        self.scale_t = {torch.float32: e.get_function("muon_scale_cast_t_f32"),
                        torch.bfloat16: e.get_function("muon_scale_cast_t_bf16")}
        self.momentum = e.get_function("muon_momentum_f32")
        self.update = e.get_function("muon_param_update_f32")
        self.partials = torch.empty(64 * 1024, device="cuda", dtype=torch.float32)

    _streams = {}

    @classmethod
    def stream(cls):
        handle = torch.cuda.current_stream().cuda_stream
        st = cls._streams.get(handle)
        if st is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                st = cls._streams[handle] = cupy.cuda.ExternalStream(handle)
        return st

    def sym_gemm(self, p, c, alpha=1.0, beta=0.0, s=None, diag=0.0, variant=None):
        """c = alpha p p^T + beta s + diag I, p [b,] m x k, c [b,] m x m."""
        batch = p.shape[0] if p.dim() == 3 else 1
        m, k = p.shape[-2], p.shape[-1]
        t = (m + BM - 1) // BM
        tiles = t * (t + 1) // 2
        sptr = s.data_ptr() if s is not None else 0
        variant = variant or self.variant
        fn, smem = (self.sym90, SM90_SMEM) if variant == "wgmma" else (self.sym, 0)
        fn((tiles, 1, batch), (256, 1, 1),
                 (np.uint64(p.data_ptr()), np.uint64(sptr), np.uint64(c.data_ptr()), np.int32(m), np.int32(k),
                  np.int64(m * k), np.int64(m * m), np.int64(m * m), np.float32(alpha), np.float32(beta),
                  np.float32(diag)), stream=self.stream(), shared_mem=smem)

    def normalize(self, g, x, safety=1.0, eps=1e-7):
        """x = g / max(safety ||g||, eps) in bf16, transposed when g is tall. Batched over dim 0 if 3-D."""
        batch = g.shape[0] if g.dim() == 3 else 1
        rows, cols = g.shape[-2], g.shape[-1]
        count = rows * cols
        nparts = max(1, min(1024, count // (256 * 16)))
        st = self.stream()
        self.sumsq[g.dtype]((nparts, batch, 1), (256, 1, 1),
                            (np.uint64(g.data_ptr()), np.int64(count), np.int64(count),
                             np.uint64(self.partials.data_ptr())), stream=st)
        if rows > cols:
            self.scale_t[g.dtype](((cols + 31) // 32, (rows + 31) // 32, batch), (256, 1, 1),
                                  (np.uint64(g.data_ptr()), np.uint64(x.data_ptr()), np.int32(rows), np.int32(cols),
                                   np.int64(count), np.uint64(self.partials.data_ptr()), np.int32(nparts),
                                   np.float32(safety), np.float32(eps)), stream=st)
        else:
            blocks = min(max(1, (count + 255) // 256), 132 * 16)
            self.scale[g.dtype]((blocks, batch, 1), (256, 1, 1),
                                (np.uint64(g.data_ptr()), np.uint64(x.data_ptr()), np.int64(count), np.int64(count),
                                 np.uint64(self.partials.data_ptr()), np.int32(nparts), np.float32(safety),
                                 np.float32(eps)), stream=st)

    def momentum_step(self, buf, grad, out, mu, nesterov):
        n = buf.numel()
        self.momentum((min((n + 255) // 256, 132 * 16), 1, 1), (256, 1, 1),
                      (np.uint64(buf.data_ptr()), np.uint64(grad.data_ptr()), np.uint64(out.data_ptr()), np.int64(n),
                       np.float32(1 - mu), np.float32(mu), np.int32(1 if nesterov else 0)), stream=self.stream())

    def param_update(self, p, o, decay, alpha):
        n = p.numel()
        self.update((min((n + 255) // 256, 132 * 16), 1, 1), (256, 1, 1),
                    (np.uint64(p.data_ptr()), np.uint64(o.data_ptr()), np.int64(n), np.float32(decay),
                     np.float32(alpha)), stream=self.stream())


def rel(out, ref):
    out = out.double()
    ref = ref.double()
    if not torch.isfinite(out).all():
        return float("nan")
    return ((out - ref).norm() / ref.norm()).item()


# ---------------------------------------------------------------- Newton-Schulz variants

def ns_reference64(g, steps=5, coeffs=KJ, eps=1e-7):
    x = g.double()
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = x.mT
    x = x / x.norm(dim=(-2, -1), keepdim=True).clamp_min(eps)
    a, b, c = coeffs
    for _ in range(steps):
        A = x @ x.mT
        B = b * A + c * A @ A
        x = a * x + B @ x
    return x.mT if tall else x


class TorchNs:
    """muon-core's NewtonSchulz in bf16, op for op (mm_out, mul_out, diagonal add_), workspaces reused."""

    def __init__(self, g, steps=5, coeffs=KJ, eps=1e-7):
        self.steps, self.coeffs, self.eps = steps, coeffs, eps
        rows, cols = g.shape[-2], g.shape[-1]
        m, n = min(rows, cols), max(rows, cols)
        lead = g.shape[:-2]
        opt = dict(device=g.device, dtype=torch.bfloat16)
        self.x = torch.empty(*lead, m, n, **opt)
        self.y = torch.empty_like(self.x)
        self.a = torch.empty(*lead, m, m, **opt)
        self.t = torch.empty_like(self.a)
        self.b = torch.empty_like(self.a)

    def __call__(self, g):
        tall = g.shape[-2] > g.shape[-1]
        gg = g.mT if tall else g
        norm = torch.linalg.vector_norm(gg, 2, dim=(-2, -1), keepdim=True, dtype=torch.float32).clamp_min_(self.eps)
        torch.div(gg, norm, out=self.x)
        x, nxt = self.x, self.y
        a, b, c = self.coeffs
        mm = torch.bmm if x.dim() == 3 else torch.mm
        dt = self.t.diagonal(0, -2, -1)
        db = self.b.diagonal(0, -2, -1)
        for _ in range(self.steps):
            mm(x, x.mT, out=self.a)
            torch.mul(self.a, c, out=self.t)
            dt.add_(b)
            mm(self.a, self.t, out=self.b)
            db.add_(a)
            mm(self.b, x, out=nxt)
            x, nxt = nxt, x
        return x.mT if tall else x


class CudaNs:
    """What CudaNewtonSchulz launches: normalise kernel, then per step two symmetric kernels and one mm."""

    def __init__(self, k, g, steps=5, coeffs=KJ, eps=1e-7, variant="mma"):
        self.k, self.steps, self.coeffs, self.eps, self.variant = k, steps, coeffs, eps, variant
        rows, cols = g.shape[-2], g.shape[-1]
        m, n = min(rows, cols), max(rows, cols)
        lead = g.shape[:-2]
        opt = dict(device=g.device, dtype=torch.bfloat16)
        self.x = torch.empty(*lead, m, n, **opt)
        self.y = torch.empty_like(self.x)
        self.a = torch.empty(*lead, m, m, **opt)
        self.b = torch.empty_like(self.a)

    def __call__(self, g):
        tall = g.shape[-2] > g.shape[-1]
        self.k.normalize(g, self.x, eps=self.eps)
        x, nxt = self.x, self.y
        a, b, c = self.coeffs
        mm = torch.bmm if x.dim() == 3 else torch.mm
        for _ in range(self.steps):
            self.k.sym_gemm(x, self.a, variant=self.variant)
            self.k.sym_gemm(self.a, self.b, alpha=c, beta=b, s=self.a, diag=a, variant=self.variant)
            mm(self.b, x, out=nxt)
            x, nxt = nxt, x
        return x.mT if tall else x


def blocked_syrk(x, out):
    """A = X X^T from cuBLAS blocks: two half-size diagonal products and one off-diagonal, mirrored.
    Not shipped; measured only to see whether a libtorch-only symmetric path would pay."""
    m = x.shape[0]
    h = m // 2
    x1, x2 = x[:h], x[h:]
    torch.mm(x1, x1.T, out=out[:h, :h])
    torch.mm(x2, x2.T, out=out[h:, h:])
    torch.mm(x1, x2.T, out=out[:h, h:])
    out[h:, :h].copy_(out[:h, h:].T)


# ---------------------------------------------------------------- the Java launcher, mirrored

class JavaMirror:
    """What dev.muon.cuda.CudaKernels does, call for call, through ctypes on libcuda: cuModuleLoadData on the
    fatbin bytes in the primary context, one native slot per argument in a void** kernelParams array (the
    KernelArgs signatures), the same grids (TriangleTiles.blockCount, normParts, gridFor), the same dynamic
    shared memory for the sm_90a kernel, torch's current stream. Java is not on the GPU machine, so this is
    how the launcher's arithmetic gets run against the real kernels."""

    THREADS = 256
    SM90_SHARED_BYTES = 5 * 2 * 128 * 64 * 2 + 1024
    MAX_NORM_PARTS = 1024

    def __init__(self, out_dir):
        import ctypes
        self.ct = ctypes
        self.cu = ctypes.CDLL("libcuda.so.1")
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # the runtime makes the primary context current on this thread
        dev = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        self.make_current()
        val = ctypes.c_int()
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(val), 16, dev), "sm count")  # MULTIPROCESSOR_COUNT
        self.sms = val.value
        self.fn = {}
        for image, names in (("ns_symmetric", ["muon_sym_gemm_bf16"]),
                             ("ns_symmetric_sm90", ["muon_sym_gemm_bf16_sm90"]),
                             ("ns_elementwise", ["muon_sumsq_f32", "muon_sumsq_bf16", "muon_scale_cast_f32",
                                                 "muon_scale_cast_bf16", "muon_scale_cast_t_f32",
                                                 "muon_scale_cast_t_bf16", "muon_momentum_f32",
                                                 "muon_param_update_f32"])):
            with open(os.path.join(out_dir, image + ".fatbin"), "rb") as f:
                data = f.read()
            buf = ctypes.create_string_buffer(data + b"\0")
            mod = ctypes.c_void_p()
            self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), buf), "cuModuleLoadData " + image)
            for n in names:
                fn = ctypes.c_void_p()
                self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, n.encode()), n)
                self.fn[n] = fn
        self.check(self.cu.cuFuncSetAttribute(self.fn["muon_sym_gemm_bf16_sm90"], 8, self.SM90_SHARED_BYTES),
                   "cuFuncSetAttribute")
        self.args = {}

    def check(self, r, what):
        if r != 0:
            raise RuntimeError(f"{what} failed with CUresult {r}")

    def make_current(self):
        cur = self.ct.c_void_p()
        self.check(self.cu.cuCtxGetCurrent(self.ct.byref(cur)), "cuCtxGetCurrent")
        if cur.value != self.ctx.value:
            self.check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def kernel_args(self, signature):
        """KernelArgs: one slot per letter, made once; the void** array points at the slots."""
        if signature not in self.args:
            ct = self.ct
            kinds = {"P": ct.c_int64, "J": ct.c_int64, "I": ct.c_int32, "F": ct.c_float}
            slots = [kinds[c]() for c in signature]
            params = (ct.c_void_p * len(slots))(*[ct.addressof(x) for x in slots])
            self.args[signature] = (slots, params)
        return self.args[signature]

    def launch(self, name, signature, values, grid, shared=0):
        slots, params = self.kernel_args(signature)
        for slot, v in zip(slots, values):
            slot.value = v
        self.make_current()
        stream = torch.cuda.current_stream().cuda_stream
        self.check(self.cu.cuLaunchKernel(self.fn[name], grid[0], grid[1], grid[2], self.THREADS, 1, 1, shared,
                                          self.ct.c_void_p(stream), params, None), "cuLaunchKernel " + name)

    def norm_parts(self, count):
        return max(1, min(self.MAX_NORM_PARTS, count // (self.THREADS * 16)))

    def grid_for(self, count):
        return max(1, min((count + self.THREADS - 1) // self.THREADS, self.sms * 16))

    def symmetric(self, p, s, c, alpha, beta, diag, hopper):
        m, k = p.shape[-2], p.shape[-1]
        batch = p.shape[0] if p.dim() == 3 else 1
        t = (m + 127) // 128
        self.launch("muon_sym_gemm_bf16_sm90" if hopper else "muon_sym_gemm_bf16", "PPPIIJJJFFF",
                    [p.data_ptr(), 0 if s is None else s.data_ptr(), c.data_ptr(), m, k, m * k, m * m, m * m,
                     alpha, 0.0 if s is None else beta, diag], (t * (t + 1) // 2, 1, batch),
                    self.SM90_SHARED_BYTES if hopper else 0)

    def normalize(self, g, x, partials, safety, eps):
        rows, cols = g.shape[-2], g.shape[-1]
        batch = g.shape[0] if g.dim() == 3 else 1
        count = rows * cols
        parts = self.norm_parts(count)
        sfx = "bf16" if g.dtype == torch.bfloat16 else "f32"
        self.launch("muon_sumsq_" + sfx, "PJJP", [g.data_ptr(), count, count, partials.data_ptr()], (parts, batch, 1))
        if rows > cols:
            self.launch("muon_scale_cast_t_" + sfx, "PPIIJPIFF",
                        [g.data_ptr(), x.data_ptr(), rows, cols, count, partials.data_ptr(), parts, safety, eps],
                        ((cols + 31) // 32, (rows + 31) // 32, batch))
        else:
            self.launch("muon_scale_cast_" + sfx, "PPJJPIFF",
                        [g.data_ptr(), x.data_ptr(), count, count, partials.data_ptr(), parts, safety, eps],
                        (self.grid_for(count), batch, 1))


class PolicyNs:
    """CudaNewtonSchulz.orthogonalize with DispatchPolicy.measured(9, 0), through the mirrored launcher."""

    MIN_XXT, MIN_FUSED, MIN_NORM = 4096, 256, 1 << 18

    def __init__(self, j, g, steps=5, coeffs=KJ, eps=1e-7):
        self.j, self.steps, self.coeffs, self.eps = j, steps, coeffs, eps
        rows, cols = g.shape[-2], g.shape[-1]
        m, n = min(rows, cols), max(rows, cols)
        aligned = m % 8 == 0 and n % 8 == 0
        self.norm = g.is_contiguous() and g.dtype in (torch.float32, torch.bfloat16) and m * n >= self.MIN_NORM
        self.xxt = aligned and m >= self.MIN_XXT
        self.fused = aligned and m >= self.MIN_FUSED
        lead = g.shape[:-2]
        opt = dict(device=g.device, dtype=torch.bfloat16)
        self.x = torch.empty(*lead, m, n, **opt)
        self.y = torch.empty_like(self.x)
        self.a = torch.empty(*lead, m, m, **opt)
        self.t = torch.empty_like(self.a)
        self.b = torch.empty_like(self.a)
        self.partials = torch.empty(max(1, g.shape[0] if g.dim() == 3 else 1) * 1024, device=g.device)

    def __call__(self, g):
        tall = g.shape[-2] > g.shape[-1]
        if self.norm:
            self.j.normalize(g, self.x, self.partials, 1.0, self.eps)
        else:
            gg = g.mT if tall else g
            nrm = torch.linalg.vector_norm(gg, 2, dim=(-2, -1), keepdim=True, dtype=torch.float32).clamp_min_(self.eps)
            torch.div(gg, nrm, out=self.x)
        x, nxt = self.x, self.y
        mm = torch.bmm if x.dim() == 3 else torch.mm
        for k in range(self.steps):
            a, b, c = self.coeffs
            if self.xxt:
                self.j.symmetric(x, None, self.a, 1.0, 0.0, 0.0, True)
            else:
                mm(x, x.mT, out=self.a)
            if self.fused:
                self.j.symmetric(self.a, self.a, self.b, c, b, a, True)
            else:
                torch.mul(self.a, c, out=self.t)
                self.t.diagonal(0, -2, -1).add_(b)
                mm(self.a, self.t, out=self.b)
                self.b.diagonal(0, -2, -1).add_(a)
            mm(self.b, x, out=nxt)
            x, nxt = nxt, x
        return x.mT if tall else x


# ---------------------------------------------------------------- checks

def poison(t):
    t.fill_(float("nan"))
    return t


def check(k, j, log):
    results = []
    for variant in ("mma", "wgmma"):
        k.variant = variant
        check_sym(k, log, results, variant)
    k.variant = "mma"
    check_rest(k, log, results)
    check_mirror(j, log, results)
    return results


def check_mirror(j, log, results):
    def record(name, err, tol, extra=""):
        name = "[java-mirror] " + name
        ok = err == err and err < tol
        results.append((name, err, tol, ok))
        log.write(f"{name:55s} err={err:.3e} tol={tol:.0e} {'ok' if ok else 'FAIL'} {extra}\n")

    torch.manual_seed(99)
    for hopper in (False, True):
        for bt, m, kk in [(1, 1000, 1024), (3, 136, 72)]:
            shape = (bt, m, kk) if bt > 1 else (m, kk)
            p = torch.randn(*shape, device="cuda").bfloat16()
            c = poison(torch.empty(*shape[:-1], m, device="cuda", dtype=torch.bfloat16))
            j.symmetric(p, None, c, 1.0, 0.0, 0.0, hopper)
            torch.cuda.synchronize()
            record(f"symmetric hopper={hopper} {shape}", rel(c, p.double() @ p.double().mT), 1e-2)
    for shape in [(1024, 4096), (4096, 1024), (2, 512, 256)]:
        g = torch.randn(*shape, device="cuda")
        tall = shape[-2] > shape[-1]
        xs = shape[:-2] + ((shape[-1], shape[-2]) if tall else shape[-2:])
        x = poison(torch.empty(*xs, device="cuda", dtype=torch.bfloat16))
        partials = torch.empty(4096, device="cuda")
        j.normalize(g, x, partials, 1.01, 1e-7)
        torch.cuda.synchronize()
        ref = g.double() / (1.01 * g.double().norm(dim=(-2, -1), keepdim=True))
        record(f"normalize safety=1.01 {shape}", rel(x, ref.mT if tall else ref), 1e-2)
    for shape in [(4096, 4096), (1024, 4096), (4096, 1024), (2048, 2048), (8192, 1024), (4, 512, 512),
                  (1020, 1020), (256, 1024)]:
        g = torch.randn(*shape, device="cuda")
        ref = ns_reference64(g)
        pn = PolicyNs(j, g)
        et = rel(TorchNs(g)(g), ref)
        ep = rel(pn(g), ref)
        torch.cuda.synchronize()
        record(f"NS5 policy {shape} norm={pn.norm} xxt={pn.xxt} fusedB={pn.fused}", ep, max(0.05, 1.5 * et),
               f"(torch bf16 path: {et:.3e})")


def check_sym(k, log, results, variant):
    def record(name, err, tol, extra=""):
        name = f"[{variant}] {name}"
        ok = err == err and err < tol
        results.append((name, err, tol, ok))
        log.write(f"{name:55s} err={err:.3e} tol={tol:.0e} {'ok' if ok else 'FAIL'} {extra}\n")


    torch.manual_seed(1234 if variant == "mma" else 4321)
    # X X^T: sizes that are and are not multiples of the 128 tile, k below, at and above one 32-deep stage.
    for m, kk in [(8, 8), (136, 24), (200, 1000), (1000, 1024), (1024, 1024), (1024, 4096), (2056, 512),
                  (4096, 4096)]:
        x = torch.randn(m, kk, device="cuda").bfloat16()
        c = poison(torch.empty(m, m, device="cuda", dtype=torch.bfloat16))
        k.sym_gemm(x, c)
        torch.cuda.synchronize()
        ref = x.double() @ x.double().T
        sym_exact = bool((c == c.T).all().item())
        record(f"xxt m={m} k={kk}", rel(c, ref), 1e-2, f"exactly_symmetric={sym_exact}")
        if not sym_exact:
            results.append((f"xxt m={m} symmetric", 1.0, 0.0, False))
    # B = b A + c A A + a I with A symmetric (a Gram matrix of a normalised X, as in NS).
    for m, kk in [(136, 64), (1000, 2000), (1024, 1024), (2048, 4096)]:
        x = torch.randn(m, kk, device="cuda")
        x = (x / x.norm()).bfloat16()
        a_ = (x @ x.T)
        a_ = ((a_ + a_.T) / 2).bfloat16()
        a, b, cc = KJ
        for diag in (0.0, a):
            out = poison(torch.empty(m, m, device="cuda", dtype=torch.bfloat16))
            k.sym_gemm(a_, out, alpha=cc, beta=b, s=a_, diag=diag)
            torch.cuda.synchronize()
            A = a_.double()
            ref = b * A + cc * A @ A + diag * torch.eye(m, device="cuda", dtype=torch.float64)
            record(f"fused b*A+c*A*A+{diag:g}*I m={m}", rel(out, ref), 1e-2)
    # Batched forms.
    for bt, m, kk in [(3, 136, 72), (8, 512, 1024), (4, 1024, 4096)]:
        x = torch.randn(bt, m, kk, device="cuda").bfloat16()
        c = poison(torch.empty(bt, m, m, device="cuda", dtype=torch.bfloat16))
        k.sym_gemm(x, c)
        torch.cuda.synchronize()
        record(f"batched xxt b={bt} m={m} k={kk}", rel(c, x.double() @ x.double().mT), 1e-2)
        a_ = (c.float() / c.float().norm(dim=(-2, -1), keepdim=True)).bfloat16()
        out = poison(torch.empty_like(c))
        k.sym_gemm(a_, out, alpha=KJ[2], beta=KJ[1], s=a_, diag=KJ[0])
        torch.cuda.synchronize()
        A = a_.double()
        ref = KJ[1] * A + KJ[2] * A @ A + KJ[0] * torch.eye(m, device="cuda", dtype=torch.float64)
        record(f"batched fused b={bt} m={m}", rel(out, ref), 1e-2)
    for shape in [(1024, 1024), (1024, 4096), (4096, 1024), (8, 512, 512), (1000, 1000)]:
        g = torch.randn(*shape, device="cuda")
        ref = ns_reference64(g)
        et = rel(TorchNs(g)(g), ref)
        ec = rel(CudaNs(k, g, variant=variant)(g), ref)
        torch.cuda.synchronize()
        record(f"NS5 cuda {shape}", ec, max(0.1, 1.5 * et), f"(torch bf16 path: {et:.3e})")
    g = torch.randn(2048, 2048, device="cuda")
    cns = CudaNs(k, g, variant=variant)
    r1 = cns(g).clone()
    r2 = cns(g).clone()
    torch.cuda.synchronize()
    record("NS5 cuda 2048^2 repeat bitwise equal", 0.0 if torch.equal(r1, r2) else 1.0, 0.5)


def check_rest(k, log, results):
    def record(name, err, tol, extra=""):
        ok = err == err and err < tol
        results.append((name, err, tol, ok))
        log.write(f"{name:55s} err={err:.3e} tol={tol:.0e} {'ok' if ok else 'FAIL'} {extra}\n")
    # Normalisation, fp32 and bf16 input, wide, square and tall (transpose folded in), batched.
    for shape in [(64, 256), (1000, 1000), (1024, 4096), (4096, 1024), (333, 77), (3, 256, 512), (3, 512, 256)]:
        for dt in (torch.float32, torch.bfloat16):
            g = (torch.randn(*shape, device="cuda") * 3.7).to(dt)
            tall = shape[-2] > shape[-1]
            xs = shape[:-2] + ((shape[-1], shape[-2]) if tall else (shape[-2], shape[-1]))
            x = poison(torch.empty(*xs, device="cuda", dtype=torch.bfloat16))
            k.normalize(g, x)
            torch.cuda.synchronize()
            gd = g.double()
            ref = gd / gd.norm(dim=(-2, -1), keepdim=True)
            if tall:
                ref = ref.mT
            record(f"normalize {dt} {shape}", rel(x, ref), 1e-2)
    # Momentum + Nesterov + cast, and the parameter update.
    for nesterov in (True, False):
        n = 1 << 20
        buf = torch.randn(n, device="cuda")
        grad = torch.randn(n, device="cuda")
        out = poison(torch.empty(n, device="cuda", dtype=torch.bfloat16))
        buf_ref = buf.double().lerp(grad.double(), 1 - 0.95)
        u_ref = grad.double().lerp(buf_ref, 0.95) if nesterov else buf_ref
        k.momentum_step(buf, grad, out, 0.95, nesterov)
        torch.cuda.synchronize()
        record(f"momentum nesterov={nesterov} buffer", rel(buf, buf_ref), 1e-6)
        record(f"momentum nesterov={nesterov} bf16 update", rel(out, u_ref), 1e-2)
    p = torch.randn(1 << 20, device="cuda")
    o = torch.randn(1 << 20, device="cuda").bfloat16()
    ref = p.double() * (1 - 0.02 * 0.1) + (-0.02) * o.double()
    k.param_update(p, o, 1 - 0.02 * 0.1, -0.02)
    torch.cuda.synchronize()
    record("param update", rel(p, ref), 1e-6)


# ---------------------------------------------------------------- timing

def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median")


def bench_graph(fn):
    """Median of CUDA-graph replays: launch gaps (Python, CuPy argument packing) taken out of both sides."""
    try:
        return triton.testing.do_bench_cudagraph(fn, rep=150, return_mode="median")
    except Exception as e:  # noqa: BLE001 - a capture failure is reported as NaN, not fatal
        print("graph timing failed:", type(e).__name__, e)
        return float("nan")


def timings(k, j, log):
    rows = []
    torch.manual_seed(7)
    nan = float("nan")
    xxt_shapes = [(256, 256), (256, 1024), (512, 512), (512, 2048), (768, 768), (768, 3072), (1024, 1024),
                  (1024, 4096), (1536, 1536), (1536, 6144), (2048, 2048), (2048, 8192), (3072, 3072),
                  (4096, 4096), (4096, 16384), (8192, 8192)]
    for m, n in xxt_shapes:
        x = torch.randn(m, n, device="cuda").bfloat16()
        c = torch.empty(m, m, device="cuda", dtype=torch.bfloat16)
        rows.append(("xxt", f"{m}x{n}", bench(lambda: torch.mm(x, x.T, out=c)),
                     bench(lambda: k.sym_gemm(x, c, variant="mma")), bench(lambda: k.sym_gemm(x, c, variant="wgmma")),
                     bench(lambda: blocked_syrk(x, c))))
    a, b, cc = KJ
    for m in (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192):
        x = torch.randn(m, m, device="cuda")
        A = ((x @ x.T) / m).bfloat16()
        t = torch.empty_like(A)
        out = torch.empty_like(A)
        dt, db = t.diagonal(), out.diagonal()

        def torch_b():
            torch.mul(A, cc, out=t)
            dt.add_(b)
            torch.mm(A, t, out=out)
            db.add_(a)

        rows.append(("fusedB", f"{m}x{m}", bench(torch_b),
                     bench(lambda: k.sym_gemm(A, out, alpha=cc, beta=b, s=A, diag=a, variant="mma")),
                     bench(lambda: k.sym_gemm(A, out, alpha=cc, beta=b, s=A, diag=a, variant="wgmma")), nan))
    for bt, m, n in [(8, 512, 512), (16, 1024, 1024), (4, 2048, 2048), (8, 1024, 4096)]:
        x = torch.randn(bt, m, n, device="cuda").bfloat16()
        c = torch.empty(bt, m, m, device="cuda", dtype=torch.bfloat16)
        rows.append(("bxxt", f"{bt}x{m}x{n}", bench(lambda: torch.bmm(x, x.mT, out=c)),
                     bench(lambda: k.sym_gemm(x, c, variant="mma")), bench(lambda: k.sym_gemm(x, c, variant="wgmma")),
                     nan))
    for shape in [(256, 1024), (1024, 256), (1024, 1024), (1024, 4096), (4096, 1024), (4096, 4096), (8192, 8192)]:
        for dtype in (torch.float32, torch.bfloat16):
            g = torch.randn(*shape, device="cuda").to(dtype)
            tall = shape[0] > shape[1]
            x = torch.empty(*((shape[1], shape[0]) if tall else shape), device="cuda", dtype=torch.bfloat16)
            gg = g.mT if tall else g

            def torch_norm():
                nrm = torch.linalg.vector_norm(gg, 2, dim=(-2, -1), keepdim=True, dtype=torch.float32).clamp_min_(1e-7)
                torch.div(gg, nrm, out=x)

            name = "norm_f32" if dtype == torch.float32 else "norm_bf16"
            rows.append((name, f"{shape[0]}x{shape[1]}", bench(torch_norm), bench(lambda: k.normalize(g, x)), nan, nan))
    for n in (1024 * 1024, 4096 * 4096):
        buf, grad = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty(n, device="cuda", dtype=torch.bfloat16)
        scratch = torch.empty_like(buf)

        def torch_mom():
            buf.lerp_(grad, 0.05)
            torch.lerp(grad, buf, 0.95, out=scratch)
            out.copy_(scratch)

        rows.append(("momentum", f"{n}", bench(torch_mom), bench(lambda: k.momentum_step(buf, grad, out, 0.95, True)),
                     nan, nan))
        p = torch.randn(n, device="cuda")

        def torch_upd():
            p.mul_(0.998)
            p.add_(out, alpha=-0.02)

        rows.append(("update", f"{n}", bench(torch_upd), bench(lambda: k.param_update(p, out, 0.998, -0.02)), nan, nan))
    for shape in [(512, 512), (768, 768), (768, 3072), (3072, 768), (1024, 1024), (1536, 1536), (2048, 2048),
                  (3072, 3072), (4096, 4096), (1024, 4096), (4096, 1024), (2048, 8192), (8192, 2048), (8192, 8192),
                  (16, 1024, 1024), (8, 1024, 4096), (4, 2048, 2048)]:
        g = torch.randn(*shape, device="cuda")
        tn = TorchNs(g)
        cm, cw = CudaNs(k, g, variant="mma"), CudaNs(k, g, variant="wgmma")
        label = "x".join(map(str, shape))
        rows.append(("NS5", label, bench(lambda: tn(g)), bench(lambda: cm(g)), bench(lambda: cw(g)), nan))
        rows.append(("NS5graph", label, bench_graph(lambda: tn(g)), bench_graph(lambda: cm(g)), bench_graph(lambda: cw(g)),
                     nan))
    a, b, cc = KJ
    for bt, m in [(8, 512), (16, 1024), (4, 2048)]:
        x = torch.randn(bt, m, m, device="cuda")
        A = ((x @ x.mT) / m).bfloat16()
        t, out = torch.empty_like(A), torch.empty_like(A)
        dt, db = t.diagonal(0, -2, -1), out.diagonal(0, -2, -1)

        def torch_bb():
            torch.mul(A, cc, out=t)
            dt.add_(b)
            torch.bmm(A, t, out=out)
            db.add_(a)

        rows.append(("bfusedB", f"{bt}x{m}x{m}", bench(torch_bb),
                     bench(lambda: k.sym_gemm(A, out, alpha=cc, beta=b, s=A, diag=a, variant="mma")),
                     bench(lambda: k.sym_gemm(A, out, alpha=cc, beta=b, s=A, diag=a, variant="wgmma")), nan))
    for shape in [(256, 1024), (512, 512), (768, 3072), (3072, 768), (1024, 1024), (1024, 4096), (4096, 1024),
                  (1536, 1536), (2048, 2048), (3072, 3072), (4096, 4096), (2048, 8192), (8192, 8192),
                  (16, 1024, 1024), (8, 1024, 4096), (4, 2048, 2048)]:
        g = torch.randn(*shape, device="cuda")
        tn, pn = TorchNs(g), PolicyNs(j, g)
        label = "x".join(map(str, shape))
        rows.append(("NS5policy", label, bench(lambda: tn(g)), bench(lambda: pn(g)), nan, nan))
        rows.append(("NS5policyG", label, bench_graph(lambda: tn(g)), bench_graph(lambda: pn(g)), nan, nan))
    return rows


def addmm_baseline(k):
    """B = b·A + c·A·A (+ a·I) as cuBLAS can do it in one addmm (beta = b, alpha = c), against the op sequence of
    muon-core's NewtonSchulz and the fused kernel: how much of the fused kernel's gain is the fusion alone."""
    rows = []
    a, b, cc = KJ
    for m in (256, 512, 1024, 2048, 4096, 8192):
        x = torch.randn(m, m, device="cuda")
        A = ((x @ x.T) / m).bfloat16()
        t, out = torch.empty_like(A), torch.empty_like(A)
        dt, db = t.diagonal(), out.diagonal()

        def core_seq():
            torch.mul(A, cc, out=t)
            dt.add_(b)
            torch.mm(A, t, out=out)
            db.add_(a)

        def addmm():
            torch.addmm(A, A, A, beta=b, alpha=cc, out=out)
            db.add_(a)

        ref = b * A.double() + cc * A.double() @ A.double() + a * torch.eye(m, device="cuda", dtype=torch.float64)
        addmm()
        e_addmm = rel(out, ref)
        rows.append((m, bench(core_seq), bench(addmm),
                     bench(lambda: k.sym_gemm(A, out, alpha=cc, beta=b, s=A, diag=a, variant="wgmma")), e_addmm))
    print(f"\n{'m':>6s} {'core seq us':>12s} {'addmm us':>9s} {'fused us':>9s} {'fused/core':>10s} {'fused/addmm':>11s}"
          f" {'addmm err':>9s}")
    for m, tc, ta, tf, e in rows:
        print(f"{m:6d} {tc * 1000:12.1f} {ta * 1000:9.1f} {tf * 1000:9.1f} {tc / tf:9.2f}x {ta / tf:10.2f}x {e:9.2e}")
    return rows


def stage_sweep(out_dir):
    """The sm_90a kernel built with 4 (shipped), 5 and 6 pipeline stages: correctness at two sizes, then X·Xᵀ and
    fused-B timings."""
    fns = {}
    for st in (4, 5, 6):
        fatbin = os.path.join(out_dir, f"sm90_s{st}.fatbin")
        r = subprocess.run(["nvcc", "-O3", "-std=c++17", *GENCODE_SM90A, f"-DMUON_SM90_STAGES={st}", "-fatbin", "-o",
                            fatbin, os.path.join(CUDA_DIR, "ns_symmetric_sm90.cu")], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            continue
        f = cupy.RawModule(path=fatbin).get_function("muon_sym_gemm_bf16_sm90")
        smem = st * 2 * 128 * 64 * 2 + 1024
        f.max_dynamic_shared_size_bytes = smem
        fns[st] = (f, smem)

    def run(st, p, c, alpha=1.0, beta=0.0, s=None, diag=0.0):
        f, smem = fns[st]
        m, kk = p.shape[-2], p.shape[-1]
        t = (m + 127) // 128
        f((t * (t + 1) // 2, 1, 1), (256, 1, 1),
          (np.uint64(p.data_ptr()), np.uint64(0 if s is None else s.data_ptr()), np.uint64(c.data_ptr()), np.int32(m),
           np.int32(kk), np.int64(m * kk), np.int64(m * m), np.int64(m * m), np.float32(alpha), np.float32(beta),
           np.float32(diag)), stream=Kernels.stream(), shared_mem=smem)

    for st in fns:
        for m, kk in ((1000, 1024), (2056, 4096)):
            x = torch.randn(m, kk, device="cuda").bfloat16()
            c = poison(torch.empty(m, m, device="cuda", dtype=torch.bfloat16))
            run(st, x, c)
            torch.cuda.synchronize()
            print(f"stages={st} xxt {m}x{kk} err={rel(c, x.double() @ x.double().T):.2e}")
    a, b, cc = KJ
    print(f"\n{'op':7s} {'shape':12s} {'torch us':>9s} " + " ".join(f"{'s' + str(st) + ' us':>9s}" for st in fns))
    for m, n in ((1024, 4096), (2048, 2048), (3072, 3072), (4096, 4096), (4096, 16384), (8192, 8192)):
        x = torch.randn(m, n, device="cuda").bfloat16()
        c = torch.empty(m, m, device="cuda", dtype=torch.bfloat16)
        tt = bench(lambda: torch.mm(x, x.T, out=c))
        ts = [bench(lambda: run(st, x, c)) for st in fns]
        print(f"{'xxt':7s} {f'{m}x{n}':12s} {tt * 1000:9.1f} " + " ".join(f"{v * 1000:9.1f}" for v in ts))
    for m in (1024, 2048, 4096, 8192):
        A = (torch.randn(m, m, device="cuda") / m ** 0.5).bfloat16()
        A = ((A + A.T) / 2).contiguous()
        out = torch.empty_like(A)
        ts = [bench(lambda: run(st, A, out, cc, b, A, a)) for st in fns]
        print(f"{'fusedB':7s} {f'{m}x{m}':12s} {'':9s} " + " ".join(f"{v * 1000:9.1f}" for v in ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--extras", action="store_true",
                    help="only the addmm baseline for B and the pipeline-depth sweep of the sm_90a kernel")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, "
          f"cupy {cupy.__version__}")
    k = Kernels(build(args.out))
    if args.extras:
        addmm_baseline(k)
        stage_sweep(args.out)
        return
    j = JavaMirror(args.out)
    with open(os.path.join(args.out, "check.log"), "w") as log:
        results = check(k, j, log)
    fails = [r for r in results if not r[3]]
    print(f"correctness: {len(results) - len(fails)}/{len(results)} passed")
    for r in fails:
        print("  FAIL", r)
    with open(os.path.join(args.out, "check.log")) as f:
        sys.stdout.write(f.read())
    if args.skip_timing:
        return
    rows = timings(k, j, None)
    with open(os.path.join(args.out, "timings.json"), "w") as f:
        json.dump({"device": props.name, "rows": rows}, f, indent=1)
    # NS5policy rows: column "mma" holds the policy path (CudaNewtonSchulz's dispatch), "wgmma" is empty.
    print(f"\n{'op':10s} {'shape':14s} {'torch ms':>9s} {'mma ms':>9s} {'wgmma ms':>9s} {'x mma':>6s} {'x wgmma':>7s}"
          f" {'blocked ms':>10s}")
    for op, shape, tt, tm, tw, tb in rows:
        print(f"{op:10s} {shape:14s} {tt:9.4f} {tm:9.4f} {tw:9.4f} {tt / tm:6.3f} {tt / tw:7.3f} {tb:10.4f}")


if __name__ == "__main__":
    main()
