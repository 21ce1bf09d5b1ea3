// Memory-bound kernels around the Newton-Schulz products (muon-cuda): one pass over memory each where the
// data dependence allows it.
//
//   muon_sumsq_{f32,bf16}          per-block partial sums of squares (fp32) of each matrix of a batch
//   muon_scale_cast_{f32,bf16}     X = G / max(s * ||G||_F, eps) cast to bf16, G wide or square
//   muon_scale_cast_t_{f32,bf16}   the same for a tall G (rows > cols): X = G^T / ..., transposed on the fly
//   muon_momentum_f32              B = lerp(B, g, w); U = nesterov ? lerp(g, B, mu) : B; out = bf16(U), w = 1 - mu
//   muon_param_update_f32          p = decay * p + alpha * o, o bf16
//
// The normalisation needs the norm before the first scaled element can be written, so it is two passes
// over G (read; read + write), the fewest without a grid-wide barrier. The partial sums are reduced again
// by every block of the second kernel (at most NORM_BLOCKS floats, from L2), which avoids a memset and an
// atomic and keeps the result deterministic.
//
// Layout: every tensor contiguous, row-major; a batch is gridDim.y with per-matrix strides. Checked by the
// Java launcher (CudaKernels) before any launch.

#include <cuda_bf16.h>
#include <stdint.h>

namespace {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warpSums[32];
    __shared__ float total;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    if (lane == 0) warpSums[warp] = v;
    __syncthreads();
    // Only warp 0 reads the per-warp sums, and the result goes to its own slot: no thread writes a word that
    // another may still be reading (compute-sanitizer racecheck flagged the shared-slot version).
    if (warp == 0) {
        int warps = (blockDim.x + 31) >> 5;
        v = lane < warps ? warpSums[lane] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) total = v;
    }
    __syncthreads();
    float result = total;
    __syncthreads();  // a later call in the same kernel rewrites warpSums and total
    return result;
}

// The scale every block of the second pass derives from the first pass's partial sums.
__device__ __forceinline__ float inverse_denominator(const float* partials, int nparts, float safety, float eps) {
    float v = 0.f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) v += partials[i];
    float norm = sqrtf(block_sum(v));
    return 1.0f / fmaxf(safety * norm, eps);
}

template <typename T>
__device__ void sumsq(const T* __restrict__ g, long long count, long long stride, float* __restrict__ partials) {
    g += blockIdx.y * stride;
    float v = 0.f;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float x = to_f32(g[i]);
        v = fmaf(x, x, v);
    }
    v = block_sum(v);
    if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = v;
}

template <typename T>
__device__ void scale_cast(const T* __restrict__ g, __nv_bfloat16* __restrict__ x, long long count,
                           long long stride, const float* __restrict__ partials, int nparts, float safety,
                           float eps) {
    g += blockIdx.y * stride;
    x += blockIdx.y * stride;
    float inv = inverse_denominator(partials + blockIdx.y * nparts, nparts, safety, eps);
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        x[i] = __float2bfloat16_rn(to_f32(g[i]) * inv);
    }
}

// G is rows x cols (rows > cols), X is cols x rows. 32 x 32 tiles through shared memory (+1 column of
// padding against bank conflicts) so that both the read of G and the write of X are coalesced.
template <typename T>
__device__ void scale_cast_t(const T* __restrict__ g, __nv_bfloat16* __restrict__ x, int rows, int cols,
                             long long stride, const float* __restrict__ partials, int nparts, float safety,
                             float eps) {
    __shared__ float tile[32][33];
    g += blockIdx.z * stride;
    x += blockIdx.z * stride;
    float inv = inverse_denominator(partials + blockIdx.z * nparts, nparts, safety, eps);
    int tx = threadIdx.x & 31;
    int ty = threadIdx.x >> 5;  // 8 warps: each covers 4 rows of the tile
    int r0 = blockIdx.y * 32;
    int c0 = blockIdx.x * 32;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        int r = r0 + ty + 8 * k;
        int c = c0 + tx;
        tile[ty + 8 * k][tx] = (r < rows && c < cols) ? to_f32(g[static_cast<long long>(r) * cols + c]) * inv : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        int xr = c0 + ty + 8 * k;  // a column of G
        int xc = r0 + tx;          // a row of G
        if (xr < cols && xc < rows) x[static_cast<long long>(xr) * rows + xc] = __float2bfloat16_rn(tile[tx][ty + 8 * k]);
    }
}

}  // namespace

extern "C" __global__ void muon_sumsq_f32(const float* g, long long count, long long stride, float* partials) {
    sumsq(g, count, stride, partials);
}

extern "C" __global__ void muon_sumsq_bf16(const __nv_bfloat16* g, long long count, long long stride,
                                           float* partials) {
    sumsq(g, count, stride, partials);
}

extern "C" __global__ void muon_scale_cast_f32(const float* g, __nv_bfloat16* x, long long count, long long stride,
                                               const float* partials, int nparts, float safety, float eps) {
    scale_cast(g, x, count, stride, partials, nparts, safety, eps);
}

extern "C" __global__ void muon_scale_cast_bf16(const __nv_bfloat16* g, __nv_bfloat16* x, long long count,
                                                long long stride, const float* partials, int nparts, float safety,
                                                float eps) {
    scale_cast(g, x, count, stride, partials, nparts, safety, eps);
}

extern "C" __global__ void __launch_bounds__(256)
muon_scale_cast_t_f32(const float* g, __nv_bfloat16* x, int rows, int cols, long long stride, const float* partials,
                      int nparts, float safety, float eps) {
    scale_cast_t(g, x, rows, cols, stride, partials, nparts, safety, eps);
}

extern "C" __global__ void __launch_bounds__(256)
muon_scale_cast_t_bf16(const __nv_bfloat16* g, __nv_bfloat16* x, int rows, int cols, long long stride,
                       const float* partials, int nparts, float safety, float eps) {
    scale_cast_t(g, x, rows, cols, stride, partials, nparts, safety, eps);
}

// torch.lerp's formula (start + w (end - start) for w < 0.5, end - (1 - w)(end - start) otherwise, each
// contracted to one fma as nvcc builds libtorch's), so the momentum buffer matches the libtorch path bit for bit
// in fp32.
__device__ __forceinline__ float lerp_torch(float start, float end, float w) {
    float d = end - start;
    return fabsf(w) < 0.5f ? fmaf(w, d, start) : fmaf(-d, 1.0f - w, end);
}

// `weight` is 1 - mu rounded once from the host's double, as libtorch rounds the Scalar of `B.lerp_(g, 1 - mu)`:
// 1.0f - float(mu) is another float for most mu (0.95: 0.050000012 against 0.050000001), which would move the
// buffer by a few ulps every step.
extern "C" __global__ void muon_momentum_f32(float* __restrict__ buf, const float* __restrict__ grad,
                                             __nv_bfloat16* __restrict__ out, long long count, float weight,
                                             float mu, int nesterov) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float g = grad[i];
        float b = lerp_torch(buf[i], g, weight);
        buf[i] = b;
        out[i] = __float2bfloat16_rn(nesterov ? lerp_torch(g, b, mu) : b);
    }
}

extern "C" __global__ void muon_param_update_f32(float* __restrict__ p, const __nv_bfloat16* __restrict__ o,
                                                 long long count, float decay, float alpha) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        p[i] = fmaf(alpha, __bfloat162float(o[i]), decay * p[i]);
    }
}
