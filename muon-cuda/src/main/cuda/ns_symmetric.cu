// Symmetric products of the Newton-Schulz iteration (muon-cuda).
//
//   muon_sym_gemm_bf16:  C = alpha * P * P^T + beta * S + diag * I
//
// with P a [batch,] m x k bf16 matrix (row-major, k contiguous) and S, C [batch,] m x m bf16 matrices.
// Two of the three products of one Newton-Schulz step have this form:
//   A = X X^T                      (P = X, alpha = 1, beta = 0, diag = 0)
//   B = b A + c A A (+ a I)        (P = A, alpha = c, beta = b, S = A, diag = a or 0)
// because A is symmetric, so A A = A A^T. The result is symmetric, so only the tiles on and above the
// diagonal are computed (T (T + 1) / 2 of T^2 tiles, T = ceil(m / 128)) and each off-diagonal tile is
// written twice, once transposed. A diagonal tile is made exactly symmetric by mirroring its upper half.
//
// Tensor cores through mma.sync.m16n8k16 (bf16 in, fp32 accumulate), operands staged by cp.async in a
// three-stage ring; this runs on sm_80 and newer (no wgmma, so Hopper runs it below its peak rate).
// The batch is gridDim.z; one launch handles a stack of same-shape matrices.
//
// Requirements, checked by the Java launcher (CudaKernels) before any launch: k % 8 == 0 and m % 8 == 0
// (16-byte rows for cp.async and vector stores), all pointers 16-byte aligned, contiguous row-major storage,
// C not aliasing P or S.

#include <cuda_bf16.h>
#include <stdint.h>

namespace {

constexpr int BM = 128;           // tile edge (square tiles: the triangle walk needs BM == BN)
constexpr int BK = 32;            // k per stage: 64-byte rows, four 16-byte chunks
constexpr int STAGES = 3;         // 3 x (2 x 8 KB) = 48 KB, the static shared-memory limit
constexpr int THREADS = 256;      // 8 warps as 2 (rows) x 4 (cols), 64 x 32 outputs each
constexpr int OUT_LD = BM + 8;    // bf16 staging row: +16 bytes keeps 16-byte alignment, breaks bank stride

struct SmemPipe {
    __nv_bfloat16 a[STAGES][BM * BK];
    __nv_bfloat16 b[STAGES][BM * BK];
};

union Smem {
    SmemPipe pipe;
    __nv_bfloat16 out[BM * OUT_LD];
};

// The 16-byte chunk (0..3) of a 64-byte row is XOR-swizzled with bits 1..2 of the row, so the eight rows
// that one ldmatrix 8x8 reads land in eight different 16-byte bank groups (unswizzled: 4-way conflicts).
__device__ __forceinline__ int swz(int row, int chunk) {
    return row * BK + ((chunk ^ ((row >> 1) & 3)) << 3);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    int bytes = valid ? 16 : 0;  // src-size 0 zero-fills: rows past m and k past the end read as zeros
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                            const void* smem) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(s));
}

__device__ __forceinline__ void mma_bf16(float* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Upper-triangle tile of linear index t: the triangle is walked column by column, column j holding
// tiles (0, j) .. (j, j), so t = j (j + 1) / 2 + i. The float root is corrected by integer steps, the same
// arithmetic as dev.muon.cuda.TriangleTiles (tested on the host).
__device__ __forceinline__ void tile_of(int t, int& ti, int& tj) {
    int j = static_cast<int>((sqrtf(8.0f * static_cast<float>(t) + 1.0f) - 1.0f) * 0.5f);
    while (j * (j + 1) / 2 > t) --j;
    while ((j + 1) * (j + 2) / 2 <= t) ++j;
    tj = j;
    ti = t - j * (j + 1) / 2;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
muon_sym_gemm_bf16(const __nv_bfloat16* __restrict__ p, const __nv_bfloat16* __restrict__ s,
                   __nv_bfloat16* __restrict__ c, int m, int k, long long strideP, long long strideS,
                   long long strideC, float alpha, float beta, float diag) {
    __shared__ __align__(128) Smem sm;

    int ti, tj;
    tile_of(blockIdx.x, ti, tj);
    const int batch = blockIdx.z;
    p += batch * strideP;
    c += batch * strideC;
    if (s != nullptr) s += batch * strideS;

    const int row0 = ti * BM;  // rows of P that give the tile's rows
    const int col0 = tj * BM;  // rows of P that give the tile's columns
    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int wm = warp >> 2;  // 0..1: 64-row half
    const int wn = warp & 3;   // 0..3: 32-column quarter

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;

    const int kTiles = (k + BK - 1) / BK;

    // Each thread copies two 16-byte chunks of each operand per stage: 128 rows x 4 chunks = 512 = 2 x 256.
    auto load_stage = [&](int slot, int kt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int idx = tid + h * THREADS;
            int r = idx >> 2;
            int ch = idx & 3;
            int kk = kt * BK + ch * 8;
            bool kin = kk < k;
            int ra = row0 + r;
            int rb = col0 + r;
            const __nv_bfloat16* ga = p + static_cast<long long>(ra < m ? ra : 0) * k + (kin ? kk : 0);
            const __nv_bfloat16* gb = p + static_cast<long long>(rb < m ? rb : 0) * k + (kin ? kk : 0);
            cp_async16(&sm.pipe.a[slot][swz(r, ch)], ga, kin && ra < m);
            cp_async16(&sm.pipe.b[slot][swz(r, ch)], gb, kin && rb < m);
        }
    };

#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (st < kTiles) load_stage(st, st);
        cp_async_commit();
    }

    for (int kt = 0; kt < kTiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        // The slot refilled here was consumed in iteration kt - 1, which every thread has left (barrier above).
        int next = kt + STAGES - 1;
        if (next < kTiles) load_stage(next % STAGES, next);
        cp_async_commit();

        const int slot = kt % STAGES;
        const __nv_bfloat16* sa = sm.pipe.a[slot];
        const __nv_bfloat16* sb = sm.pipe.b[slot];
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            unsigned af[4][4];
            unsigned bf[4][2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                int r = wm * 64 + i * 16 + (lane & 15);
                int ch = ks * 2 + (lane >> 4);
                ldmatrix_x4(af[i][0], af[i][1], af[i][2], af[i][3], &sa[swz(r, ch)]);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                int r = wn * 32 + j * 16 + (lane & 7) + ((lane >> 4) << 3);
                int ch = ks * 2 + ((lane >> 3) & 1);
                ldmatrix_x4(bf[2 * j][0], bf[2 * j][1], bf[2 * j + 1][0], bf[2 * j + 1][1], &sb[swz(r, ch)]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) mma_bf16(acc[i][j], af[i], bf[j]);
        }
    }
    cp_async_wait<0>();
    __syncthreads();  // the staging buffer below overlays the operand ring

    // Epilogue: scale, add beta*S and diag*I in fp32, round once to bf16, stage the tile in shared memory.
    const int g = lane >> 2;
    const int tq = lane & 3;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int lr = wm * 64 + i * 16 + g + h * 8;
                int lc = wn * 32 + j * 8 + tq * 2;
                int gr = row0 + lr;
                int gc = col0 + lc;
                float v0 = alpha * acc[i][j][2 * h];
                float v1 = alpha * acc[i][j][2 * h + 1];
                if (s != nullptr && beta != 0.f && gr < m && gc < m) {
                    // gc is even and m % 8 == 0, so the pair gc, gc + 1 is in bounds together.
                    __nv_bfloat162 sv = *reinterpret_cast<const __nv_bfloat162*>(&s[static_cast<long long>(gr) * m + gc]);
                    v0 += beta * __bfloat162float(sv.x);
                    v1 += beta * __bfloat162float(sv.y);
                }
                if (gr == gc) v0 += diag;
                if (gr == gc + 1) v1 += diag;
                *reinterpret_cast<__nv_bfloat162*>(&sm.out[lr * OUT_LD + lc]) = __floats2bfloat162_rn(v0, v1);
            }
        }
    }
    __syncthreads();

    const int rows = min(BM, m - row0);
    const int cols = min(BM, m - col0);
    if (ti == tj) {
        // Diagonal tile: element (r, q) takes the staged value at (min, max), so the tile is exactly symmetric.
        for (int idx = tid; idx < BM * BM; idx += THREADS) {
            int r = idx / BM;
            int q = idx % BM;
            if (r < rows && q < cols) {
                int lo = min(r, q), hi = max(r, q);
                c[static_cast<long long>(row0 + r) * m + col0 + q] = sm.out[lo * OUT_LD + hi];
            }
        }
        return;
    }
    // Tile (ti, tj): 16-byte row vectors, coalesced.
    for (int idx = tid; idx < BM * (BM / 8); idx += THREADS) {
        int r = idx >> 4;
        int ch = idx & 15;
        if (r < rows && ch * 8 < cols) {
            *reinterpret_cast<uint4*>(&c[static_cast<long long>(row0 + r) * m + col0 + ch * 8]) =
                *reinterpret_cast<const uint4*>(&sm.out[r * OUT_LD + ch * 8]);
        }
    }
    // Mirror tile (tj, ti): a thread gathers a column of 8 staged values; consecutive lanes read consecutive
    // columns (no bank conflicts) and write 16 bytes each to a different row.
    for (int idx = tid; idx < BM * (BM / 8); idx += THREADS) {
        int q = idx & (BM - 1);  // staged column = output row
        int ch = idx >> 7;       // chunk of staged rows = output columns
        if (q < cols && ch * 8 < rows) {
            __align__(16) __nv_bfloat16 v[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) v[e] = sm.out[(ch * 8 + e) * OUT_LD + q];
            *reinterpret_cast<uint4*>(&c[static_cast<long long>(col0 + q) * m + row0 + ch * 8]) =
                *reinterpret_cast<const uint4*>(v);
        }
    }
}
