// Hopper (sm_90a) form of muon_sym_gemm_bf16 (see ns_symmetric.cu for the contract and the triangle walk).
//
//   muon_sym_gemm_bf16_sm90:  C = alpha * P * P^T + beta * S + diag * I, upper-triangle tiles, mirrored store
//
// Same arguments, same requirements, same output as the portable kernel, but the products run on wgmma
// (warpgroup MMA, asynchronous, operands read by the tensor cores straight from shared memory), the only
// bf16 matrix path that reaches Hopper's full rate: mma.sync tops out near half of it. Two warpgroups each
// own 64 rows of a 128 x 128 tile (m64n128k16 per 16 of k). Operands arrive by cp.async in a five-stage ring
// laid out in the 128-byte swizzle that the wgmma descriptors name, three tiles ahead, so that one k-tile of
// wgmma stays in flight while the next is issued.
//
// Built only for sm_90a (wgmma has no PTX that later architectures can JIT); the launcher uses it only on
// compute capability 9.0 and the portable kernel elsewhere.

#include <cuda_bf16.h>
#include <stdint.h>

namespace {

constexpr int BM = 128;
constexpr int BK = 64;           // one 128-byte swizzle row of bf16
#ifndef MUON_SM90_STAGES
#define MUON_SM90_STAGES 5  // 4, 5 and 6 measured on an H100 (docs/cuda.md): 5 was fastest at 9 of 10 shapes
#endif
constexpr int STAGES = MUON_SM90_STAGES;
constexpr int THREADS = 256;     // two warpgroups
constexpr int OUT_LD = BM + 8;
constexpr int STAGE_BYTES = 2 * BM * BK * 2;  // A and B tiles, bf16

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 128-byte swizzle (what TMA's SWIZZLE_128B writes and a layout-type-1 descriptor reads): the 16-byte chunk
// c of row r sits at chunk c ^ (r % 8). Each stage buffer starts on a 1024-byte boundary (8 rows).
__device__ __forceinline__ uint32_t swz_offset(int row, int chunk) {
    return static_cast<uint32_t>(row * 128 + ((chunk ^ (row & 7)) << 4));
}

__device__ __forceinline__ void cp_async16(uint32_t saddr, const void* gmem, bool valid) {
    int bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gmem), "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Shared-memory matrix descriptor: start address, leading byte offset 16 (unused by swizzled K-major
// layouts), stride byte offset 1024 (from one 8-row group to the next), layout type 1 = 128-byte swizzle.
__device__ __forceinline__ uint64_t descriptor(uint32_t saddr) {
    uint64_t d = 0;
    d |= static_cast<uint64_t>((saddr & 0x3FFFF) >> 4);
    d |= static_cast<uint64_t>(16 >> 4) << 16;
    d |= static_cast<uint64_t>(1024 >> 4) << 32;
    d |= static_cast<uint64_t>(1) << 62;
    return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Keeps the compiler from moving reads of the accumulators across a wgmma wait.
__device__ __forceinline__ void fence_operands(float* d) {
#pragma unroll
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void wgmma_m64n128k16(float* d, uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}

// Same walk as ns_symmetric.cu and dev.muon.cuda.TriangleTiles.
__device__ __forceinline__ void tile_of(int t, int& ti, int& tj) {
    int j = static_cast<int>((sqrtf(8.0f * static_cast<float>(t) + 1.0f) - 1.0f) * 0.5f);
    while (j * (j + 1) / 2 > t) --j;
    while ((j + 1) * (j + 2) / 2 <= t) ++j;
    tj = j;
    ti = t - j * (j + 1) / 2;
}

}  // namespace

// Dynamic shared memory: STAGES * STAGE_BYTES + 1024 (alignment slack) = 164864 bytes for 5 stages; the launcher raises
// the kernel's limit (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before the first launch.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
muon_sym_gemm_bf16_sm90(const __nv_bfloat16* __restrict__ p, const __nv_bfloat16* __restrict__ s,
                        __nv_bfloat16* __restrict__ c, int m, int k, long long strideP, long long strideS,
                        long long strideC, float alpha, float beta, float diag) {
    extern __shared__ uint8_t dyn[];
    uint8_t* smem = dyn + ((1024 - (smem_addr(dyn) & 1023)) & 1023);
    const uint32_t sbase = smem_addr(smem);

    int ti, tj;
    tile_of(blockIdx.x, ti, tj);
    const int batch = blockIdx.z;
    p += batch * strideP;
    c += batch * strideC;
    if (s != nullptr) s += batch * strideS;

    const int row0 = ti * BM;
    const int col0 = tj * BM;
    const int tid = threadIdx.x;
    const int wg = tid >> 7;

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.f;

    const int kTiles = (k + BK - 1) / BK;

    // 128 rows x 8 chunks per operand = 1024 chunks: four per thread per operand.
    auto load_stage = [&](int slot, int kt) {
        uint32_t sa = sbase + slot * STAGE_BYTES;
        uint32_t sb = sa + BM * BK * 2;
#pragma unroll
        for (int h = 0; h < 4; ++h) {
            int idx = tid + h * THREADS;
            int r = idx >> 3;
            int ch = idx & 7;
            int kk = kt * BK + ch * 8;
            bool kin = kk < k;
            int ra = row0 + r;
            int rb = col0 + r;
            const __nv_bfloat16* ga = p + static_cast<long long>(ra < m ? ra : 0) * k + (kin ? kk : 0);
            const __nv_bfloat16* gb = p + static_cast<long long>(rb < m ? rb : 0) * k + (kin ? kk : 0);
            cp_async16(sa + swz_offset(r, ch), ga, kin && ra < m);
            cp_async16(sb + swz_offset(r, ch), gb, kin && rb < m);
        }
    };

#pragma unroll
    for (int st = 0; st < STAGES - 2; ++st) {
        if (st < kTiles) load_stage(st, st);
        cp_async_commit();
    }

    for (int kt = 0; kt < kTiles; ++kt) {
        cp_async_wait<STAGES - 3>();
        // The tensor cores read through the async proxy: make this thread's cp.async data visible to it.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        // Refill the slot of tile kt - 2: both warpgroups waited for its wgmma (wait_group 1 below) before
        // reaching the barrier above.
        int next = kt + STAGES - 2;
        if (next < kTiles) load_stage(next % STAGES, next);
        cp_async_commit();

        const int slot = kt % STAGES;
        uint32_t sa = sbase + slot * STAGE_BYTES + wg * 64 * 128;  // this warpgroup's 64 rows
        uint32_t sb = sbase + slot * STAGE_BYTES + BM * BK * 2;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // Within a swizzled row, 16 more of k is 32 bytes more of start address.
            wgmma_m64n128k16(d, descriptor(sa + kk * 32), descriptor(sb + kk * 32), (kt > 0 || kk > 0) ? 1 : 0);
        }
        wgmma_commit();
        wgmma_wait<1>();
        fence_operands(d);
    }
    wgmma_wait<0>();
    fence_operands(d);
    cp_async_wait<0>();
    __syncthreads();

    __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(smem);
    const int lane = tid & 31;
    const int warp = (tid >> 5) & 3;
    const int g = lane >> 2;
    const int tq = lane & 3;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int lr = wg * 64 + warp * 16 + g + h * 8;
            int lc = i * 8 + tq * 2;
            int gr = row0 + lr;
            int gc = col0 + lc;
            float v0 = alpha * d[4 * i + 2 * h];
            float v1 = alpha * d[4 * i + 2 * h + 1];
            if (s != nullptr && beta != 0.f && gr < m && gc < m) {
                __nv_bfloat162 sv = *reinterpret_cast<const __nv_bfloat162*>(&s[static_cast<long long>(gr) * m + gc]);
                v0 += beta * __bfloat162float(sv.x);
                v1 += beta * __bfloat162float(sv.y);
            }
            if (gr == gc) v0 += diag;
            if (gr == gc + 1) v1 += diag;
            *reinterpret_cast<__nv_bfloat162*>(&out[lr * OUT_LD + lc]) = __floats2bfloat162_rn(v0, v1);
        }
    }
    __syncthreads();

    const int rows = min(BM, m - row0);
    const int cols = min(BM, m - col0);
    if (ti == tj) {
        for (int idx = tid; idx < BM * BM; idx += THREADS) {
            int r = idx / BM;
            int q = idx % BM;
            if (r < rows && q < cols) {
                int lo = min(r, q), hi = max(r, q);
                c[static_cast<long long>(row0 + r) * m + col0 + q] = out[lo * OUT_LD + hi];
            }
        }
        return;
    }
    for (int idx = tid; idx < BM * (BM / 8); idx += THREADS) {
        int r = idx >> 4;
        int ch = idx & 15;
        if (r < rows && ch * 8 < cols) {
            *reinterpret_cast<uint4*>(&c[static_cast<long long>(row0 + r) * m + col0 + ch * 8]) =
                *reinterpret_cast<const uint4*>(&out[r * OUT_LD + ch * 8]);
        }
    }
    for (int idx = tid; idx < BM * (BM / 8); idx += THREADS) {
        int q = idx & (BM - 1);
        int ch = idx >> 7;
        if (q < cols && ch * 8 < rows) {
            __align__(16) __nv_bfloat16 v[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) v[e] = out[(ch * 8 + e) * OUT_LD + q];
            *reinterpret_cast<uint4*>(&c[static_cast<long long>(col0 + q) * m + row0 + ch * 8]) =
                *reinterpret_cast<const uint4*>(v);
        }
    }
}
