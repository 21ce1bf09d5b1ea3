/*
 * Muon's two memory-bound stages around the orthogonalization, for contiguous float32 parameters on the CPU, each
 * in one pass over memory; called through JNI from dev.muon.NativeUpdateKernels (dev.muon.NativeFusedUpdateKernels):
 *
 *   momentum   B = lerp(B, g, 1 − μ);  U = nesterov ? lerp(g, B, μ) : B;  out = U (float32, or rounded to bfloat16)
 *   update     p = decay·p + alpha·O   (O float32 or bfloat16, as stored or transposed; the product with decay
 *              skipped when decay is 1)
 *
 * On libtorch's ops these are lerp_, lerp_out and a cast (three passes; 30 bytes per entry with a bfloat16 U), and
 * mul_ and add_ (two passes, plus a float32 copy of a bfloat16 O): about 1.2 GB per step of a GPT-2-small-width
 * model's 28 M Muon entries, where these move about 0.7 GB.
 *
 * The same bits as libtorch's ops, by construction: each value is computed with the operations and roundings of
 * ATen's vectorized CPU kernels (lerp: fma(coefficient, end − start, base) with the weight's small/large branch;
 * add with alpha: fma(other, alpha, self); mul: one rounded product; float32 to bfloat16: round to nearest even),
 * with the scalars rounded to float32 as ATen rounds them. gcc builds this file with -std=c11, which does not
 * contract a·b + c into an fma, so every fma below is an explicit one. NativeFusedUpdateKernelsTest compares the bits with
 * libtorch's ops for each variant this CPU runs.
 *
 * Each entry is independent, so the result does not depend on the thread count. Two variants of one loop body
 * (AVX-512 and AVX2 with FMA, vectorized by gcc), dispatched on the variant Java passes, like the other kernels.
 */
#include <jni.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "muon_kernels.h"

#define BODY static inline __attribute__((always_inline))
#define AVX512_KERNEL __attribute__((target("avx512f,avx512bw,avx512vl")))
#define AVX2_KERNEL __attribute__((target("avx2,fma")))

/* Entries per thread below which a pass stays on the calling thread (waking a thread costs more than it saves). */
#define MIN_ENTRIES_PER_THREAD 65536

/* ATen's lerp(start, end, w) for a weight known per call: fma(w, end − start, start) for |w| < 0.5, else
 * fma(w − 1, end − start, end). */
typedef struct {
    float coefficient;
    int from_end; /* the base is end (the large-weight branch) */
} lerp_weight;

static lerp_weight lerp_of(float w) {
    lerp_weight l;
    l.from_end = !(fabsf(w) < 0.5f);
    l.coefficient = l.from_end ? w - 1.0f : w;
    return l;
}

BODY float lerp(float start, float end, lerp_weight w) {
    return fmaf(w.coefficient, end - start, w.from_end ? end : start);
}

BODY void momentum_range(float *restrict buffer, const float *restrict grad, void *restrict out, int out_bfloat16,
                         lerp_weight advance, lerp_weight blend, int nesterov, long first, long end) {
    float *out32 = (float *) out;
    uint16_t *out16 = (uint16_t *) out;
    for (long i = first; i < end; i++) {
        float g = grad[i];
        float b = lerp(buffer[i], g, advance);
        buffer[i] = b;
        float u = nesterov ? lerp(g, b, blend) : b;
        if (out_bfloat16) {
            out16[i] = muon_bf16_round(u);
        } else {
            out32[i] = u;
        }
    }
}

BODY void update_range(float *restrict param, const void *restrict update, int update_bfloat16, float decay,
                       int decayed, float alpha, long first, long end) {
    const float *o32 = (const float *) update;
    const uint16_t *o16 = (const uint16_t *) update;
    for (long i = first; i < end; i++) {
        float p = decayed ? param[i] * decay : param[i];
        float o = update_bfloat16 ? muon_bf16_value(o16[i]) : o32[i];
        param[i] = fmaf(o, alpha, p);
    }
}

/* The update with O stored transposed (a tall parameter's orthogonalized update is the transpose of the wide
 * matrix the iteration ran on): param is rows × cols, update cols × rows; 32 × 32 blocks [first, end) in row-major
 * block order. */
BODY void update_transposed_blocks(float *restrict param, const void *restrict update, int update_bfloat16,
                                   float decay, int decayed, float alpha, long rows, long cols, long first,
                                   long end) {
    const float *o32 = (const float *) update;
    const uint16_t *o16 = (const uint16_t *) update;
    for (long b = first; b < end; b++) {
        muon_block k = muon_block_at(b, rows, cols, 32);
        for (long r = k.row0; r < k.row0 + k.rows; r++) {
            for (long c = k.col0; c < k.col0 + k.cols; c++) {
                float p = decayed ? param[r * cols + c] * decay : param[r * cols + c];
                float o = update_bfloat16 ? muon_bf16_value(o16[c * rows + r]) : o32[c * rows + r];
                param[r * cols + c] = fmaf(o, alpha, p);
            }
        }
    }
}

/*
 * The loops with their branches hoisted, so that gcc vectorizes each combination without a per-entry test. One
 * instance per instruction set: the body is inlined into a function with that target.
 */
#define MOMENTUM_VARIANT(name, target)                                                                            \
    target static void name(float *restrict buffer, const float *restrict grad, void *restrict out,              \
                            int out_bfloat16, lerp_weight advance, lerp_weight blend, int nesterov, long first,  \
                            long end) {                                                                          \
        if (out_bfloat16) {                                                                                      \
            if (nesterov) {                                                                                      \
                momentum_range(buffer, grad, out, 1, advance, blend, 1, first, end);                             \
            } else {                                                                                             \
                momentum_range(buffer, grad, out, 1, advance, blend, 0, first, end);                             \
            }                                                                                                    \
        } else if (nesterov) {                                                                                   \
            momentum_range(buffer, grad, out, 0, advance, blend, 1, first, end);                                 \
        } else {                                                                                                 \
            momentum_range(buffer, grad, out, 0, advance, blend, 0, first, end);                                 \
        }                                                                                                        \
    }

#define UPDATE_VARIANT(name, target)                                                                              \
    target static void name(float *restrict param, const void *restrict update, int update_bfloat16, float decay, \
                            int decayed, float alpha, long first, long end) {                                    \
        if (update_bfloat16) {                                                                                   \
            if (decayed) {                                                                                       \
                update_range(param, update, 1, decay, 1, alpha, first, end);                                     \
            } else {                                                                                             \
                update_range(param, update, 1, decay, 0, alpha, first, end);                                     \
            }                                                                                                    \
        } else if (decayed) {                                                                                    \
            update_range(param, update, 0, decay, 1, alpha, first, end);                                         \
        } else {                                                                                                 \
            update_range(param, update, 0, decay, 0, alpha, first, end);                                         \
        }                                                                                                        \
    }

#define UPDATE_TRANSPOSED_VARIANT(name, target)                                                                   \
    target static void name(float *restrict param, const void *restrict update, int update_bfloat16, float decay, \
                            int decayed, float alpha, long rows, long cols, long first, long end) {              \
        update_transposed_blocks(param, update, update_bfloat16, decay, decayed, alpha, rows, cols, first, end);  \
    }

MOMENTUM_VARIANT(momentum_avx512, AVX512_KERNEL)
MOMENTUM_VARIANT(momentum_avx2, AVX2_KERNEL)
UPDATE_VARIANT(update_avx512, AVX512_KERNEL)
UPDATE_VARIANT(update_avx2, AVX2_KERNEL)
UPDATE_TRANSPOSED_VARIANT(update_transposed_avx512, AVX512_KERNEL)
UPDATE_TRANSPOSED_VARIANT(update_transposed_avx2, AVX2_KERNEL)

/* The threads a pass of n entries uses: at most `threads`, each with at least MIN_ENTRIES_PER_THREAD entries. */
static int threads_for(long n, int threads) {
    long useful = n / MIN_ENTRIES_PER_THREAD;
    if (useful < 1) {
        return 1;
    }
    return useful < threads ? (int) useful : threads;
}

/* Thread t's share [first, end) of n entries, cut at multiples of 64 entries (whole cache lines). */
static void share(long n, int t, int count, long *first, long *end) {
    long units = (n + 63) / 64;
    *first = units * t / count * 64;
    *end = units * (t + 1) / count * 64;
    if (*first > n) {
        *first = n;
    }
    if (*end > n) {
        *end = n;
    }
}

/*
 * The momentum stage over n entries: buffer and grad float32, out float32 or bfloat16 (outBfloat16), all contiguous
 * and not overlapping; the caller checked them.
 */
JNIEXPORT void JNICALL Java_dev_muon_NativeUpdateKernels_momentum(JNIEnv *env, jclass cls, jint variant,
                                                                  jlong buffer, jlong grad, jlong out,
                                                                  jboolean outBfloat16, jlong n, jdouble momentum,
                                                                  jboolean nesterov, jint threads) {
    (void) env;
    (void) cls;
    /* As libtorch rounds them: the Scalars 1 − μ and μ, each formed in double, to float32. */
    lerp_weight advance = lerp_of((float) (1.0 - momentum));
    lerp_weight blend = lerp_of((float) momentum);
    float *b = (float *) (intptr_t) buffer;
    const float *g = (const float *) (intptr_t) grad;
    void *o = (void *) (intptr_t) out;
    int count = threads_for(n, threads);
#pragma omp parallel num_threads(count) if (count > 1)
    {
        long first;
        long end;
        share(n, omp_get_thread_num(), omp_get_num_threads(), &first, &end);
        if (variant == MUON_VARIANT_AVX2) {
            momentum_avx2(b, g, o, outBfloat16, advance, blend, nesterov, first, end);
        } else {
            momentum_avx512(b, g, o, outBfloat16, advance, blend, nesterov, first, end);
        }
    }
}

/*
 * The update stage over the rows × cols param: float32, contiguous; update float32 or bfloat16 (updateBfloat16),
 * contiguous rows × cols or, with transposed, contiguous cols × rows holding the transpose; not overlapping; the
 * caller checked them.
 */
JNIEXPORT void JNICALL Java_dev_muon_NativeUpdateKernels_update(JNIEnv *env, jclass cls, jint variant, jlong param,
                                                                jlong update, jboolean updateBfloat16,
                                                                jboolean transposed, jlong rows, jlong cols,
                                                                jdouble decay, jdouble alpha, jint threads) {
    (void) env;
    (void) cls;
    float *p = (float *) (intptr_t) param;
    const void *o = (const void *) (intptr_t) update;
    /* libtorch's mul_ is skipped without weight decay (decay exactly 1); a product with 1 changes no bits anyway. */
    int decayed = decay != 1.0;
    float decay32 = (float) decay;
    float alpha32 = (float) alpha;
    long n = rows * cols;
    int count = threads_for(n, threads);
    if (transposed) {
        long blocks = ((rows + 31) / 32) * ((cols + 31) / 32);
#pragma omp parallel num_threads(count) if (count > 1)
        {
            int t = omp_get_thread_num();
            int parts = omp_get_num_threads();
            long first = blocks * t / parts;
            long end = blocks * (t + 1) / parts;
            if (variant == MUON_VARIANT_AVX2) {
                update_transposed_avx2(p, o, updateBfloat16, decay32, decayed, alpha32, rows, cols, first, end);
            } else {
                update_transposed_avx512(p, o, updateBfloat16, decay32, decayed, alpha32, rows, cols, first, end);
            }
        }
        return;
    }
#pragma omp parallel num_threads(count) if (count > 1)
    {
        long first;
        long end;
        share(n, omp_get_thread_num(), omp_get_num_threads(), &first, &end);
        if (variant == MUON_VARIANT_AVX2) {
            update_avx2(p, o, updateBfloat16, decay32, decayed, alpha32, first, end);
        } else {
            update_avx512(p, o, updateBfloat16, decay32, decayed, alpha32, first, end);
        }
    }
}
