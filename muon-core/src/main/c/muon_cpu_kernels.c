/*
 * muon-core's CPU kernels in C, called through JNI from dev.muon.orthogonalize.NativeKernels.
 *
 * One kernel: the bfloat16 self product out = x·xᵀ (a "syrk") for a row-major m × k matrix, float32 accumulation,
 * both triangles written, rounded once to bfloat16 (round to nearest even). libtorch has no half product for
 * bfloat16 and a GEMM does all m² dot products; this one computes the lower triangle only (about half the
 * multiply-adds) with AVX512_BF16's vdpbf16ps and writes each value to both of its places, so the result is
 * exactly symmetric by construction. Measured against libtorch's own GEMM in docs/benchmarks.md.
 *
 * Its polynomial form, for a symmetric m × m s: out = a·I + b·s + c·s·s, the Newton–Schulz polynomial, with the
 * sum formed in float32 from the unrounded product and rounded once (libtorch's ops would round s·s first and then
 * make two more passes over m × m).
 *
 * The AVX2 variant of the same product (float32 FMAs on values widened in the pack, for CPUs without AVX512_BF16)
 * is in muon_avx2_kernels.c; the JNI entries below dispatch on the variant Java passes.
 *
 * Built without AVX-512 flags: only the functions marked KERNEL use the AVX-512 instructions, and Java calls them
 * only after muon_variant_supported() said yes, so loading this library on any x86-64 CPU is safe.
 *
 * Threads: libgomp's OpenMP, which is libtorch's own pool once libtorch is loaded (same soname), so the kernel
 * neither adds a thread pool nor competes with libtorch's spinning threads.
 */
#include <jni.h>
#include <immintrin.h>
#include <omp.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "muon_kernels.h"

#define KERNEL __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Rows of x per packed panel, which is also the width (columns of out) of one register tile. */
#define PANEL MUON_BF16_PANEL
/* Rows of out per register tile: 8 × 32 float32 accumulators in 16 zmm registers. */
#define TILE_ROWS MUON_BF16_TILE_ROWS

/*
 * The packed layout: x's rows in panels of PANEL rows; within a panel, for each pair of columns (2q, 2q+1), the
 * PANEL rows' two values side by side, so that one 64-byte load gives 16 rows' pairs (vdpbf16ps's B operand) and
 * one row's pair is a 32-bit broadcast (its A operand). Rows past m and the column past an odd k are zero.
 */
static inline size_t panel_elems(int pairs) {
    return (size_t) pairs * PANEL * 2;
}

/* One row's pairs from q0 on, and an odd k's last column (its pair's other half zero), at their places in the panel:
 * what the 16 × 16 blocks below leave, which is every pair of a panel that m cuts short. */
static void pack_row_tail(const uint16_t *src, int k, uint32_t *d, int q0) {
    int full = k / 2;
    for (int q = q0; q < full; q++) {
        uint32_t v;
        memcpy(&v, src + 2 * q, sizeof v);
        d[(size_t) q * PANEL] = v;
    }
    if (k & 1) {
        d[(size_t) full * PANEL] = src[k - 1];
    }
}

/* Packing moves every value once, with a scalar load and store each; at 768² that took 0.19 ms of a 1.2 ms product
 * on one thread. Full panels go through registers instead, 16 rows by 16 pairs at a time (4.5x faster). */
KERNEL void muon_bf16_pack_panels(const uint16_t *x, int m, int k, uint16_t *packed, int first_panel,
                                  int end_panel) {
    int pairs = (k + 1) / 2;
    int full = k / 2;
    for (int p = first_panel; p < end_panel; p++) {
        uint32_t *dst = (uint32_t *) (packed + (size_t) p * panel_elems(pairs));
        int vector_pairs = 0;
        if (p * PANEL + PANEL <= m) {
            /* A full panel: blocks of 16 pairs by 16 rows, transposed in registers. */
            vector_pairs = full / 16 * 16;
            for (int q = 0; q < vector_pairs; q += 16) {
                for (int half = 0; half < PANEL; half += 16) {
                    /* A pair is 32 bits: the float transpose moves them unchanged. */
                    __m512 r[16];
                    for (int i = 0; i < 16; i++) {
                        r[i] = _mm512_loadu_ps(x + (size_t) (p * PANEL + half + i) * k + 2 * q);
                    }
                    muon_transpose16(r);
                    for (int j = 0; j < 16; j++) {
                        _mm512_storeu_ps(dst + (size_t) (q + j) * PANEL + half, r[j]);
                    }
                }
            }
        }
        for (int r = 0; r < PANEL; r++) {
            int row = p * PANEL + r;
            uint32_t *d = dst + r;
            if (row >= m) {
                for (int q = 0; q < pairs; q++) {
                    d[(size_t) q * PANEL] = 0;
                }
                continue;
            }
            pack_row_tail(x + (size_t) row * k, k, d, vector_pairs);
        }
    }
}

/* The polynomial form's operands: out = a·I + b·s + c·(s·s); s is null for the plain product. */
typedef struct {
    const uint16_t *s;
    float a, b, c;
} epilogue;

/* bfloat16 to float32 of 16 values, the lanes past n zero (no read past them). */
KERNEL static inline __m512 load_bf16(const uint16_t *p, int n) {
    __mmask16 mask = n >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << (n > 0 ? n : 0)) - 1u);
    __m256i v = _mm256_maskz_loadu_epi16(mask, p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

/*
 * One register tile: rows [row0, row0 + rows) of out against the PANEL columns of panel col_panel, over all k.
 * Values with column <= row are stored at (row, col) and (col, row); the rest of a tile that crosses the diagonal
 * is the mirror of values another row of the same tile column stores.
 */
KERNEL static void tile(const uint16_t *packed, int pairs, int m, int row0, int rows, int col_panel, uint16_t *out,
                        const epilogue *poly) {
    const uint16_t *a = packed + (size_t) (row0 / PANEL) * panel_elems(pairs) + (row0 % PANEL) * 2;
    const uint16_t *b = packed + (size_t) col_panel * panel_elems(pairs);
    __m512 acc[TILE_ROWS][2];
    muon_bf16_tile_sums(a, b, pairs, acc);
    int col0 = col_panel * PANEL;
    int cols = m - col0 < PANEL ? m - col0 : PANEL;
    if (poly->s != NULL) {
        __m512 vc = _mm512_set1_ps(poly->c);
        __m512 vb = _mm512_set1_ps(poly->b);
        for (int r = 0; r < rows; r++) {
            int row = row0 + r;
            const uint16_t *srow = poly->s + (size_t) row * m + col0;
            for (int h = 0; h < 2; h++) {
                __m512 sv = load_bf16(srow + 16 * h, cols - 16 * h);
                acc[r][h] = _mm512_fmadd_ps(acc[r][h], vc, _mm512_mul_ps(sv, vb));
                int lane = row - col0 - 16 * h;
                if (lane >= 0 && lane < 16) {
                    acc[r][h] = _mm512_mask_add_ps(acc[r][h], (__mmask16) (1u << lane), acc[r][h],
                                                   _mm512_set1_ps(poly->a));
                }
            }
        }
    }
    uint16_t values[TILE_ROWS][PANEL];
    for (int r = 0; r < TILE_ROWS; r++) {
        _mm256_storeu_si256((__m256i *) values[r], (__m256i) _mm512_cvtneps_pbh(acc[r][0]));
        _mm256_storeu_si256((__m256i *) (values[r] + 16), (__m256i) _mm512_cvtneps_pbh(acc[r][1]));
    }
    for (int r = 0; r < rows; r++) {
        int row = row0 + r;
        int below = row - col0 + 1; /* columns col0 .. row are on or below the diagonal */
        int n = below < cols ? below : cols;
        memcpy(out + (size_t) row * m + col0, values[r], (size_t) n * sizeof(uint16_t));
        for (int c = 0; c < n; c++) {
            out[(size_t) (col0 + c) * m + row] = values[r][c];
        }
    }
}

/* The lower-triangle tiles, numbered panel by panel: tile t of panel p covers rows from p's first row down. */
static inline int row_tiles(int m) {
    return (m + TILE_ROWS - 1) / TILE_ROWS;
}

KERNEL static void tiles(const uint16_t *packed, int pairs, int m, uint16_t *out, const epilogue *poly, long first,
                         long end) {
    int panels = (m + PANEL - 1) / PANEL;
    int total_rows = row_tiles(m);
    long index = 0;
    for (int p = 0; p < panels && index < end; p++) {
        int start = p * PANEL / TILE_ROWS;
        long count = total_rows - start;
        if (index + count <= first) {
            index += count;
            continue;
        }
        for (int t = start; t < total_rows; t++, index++) {
            if (index < first) {
                continue;
            }
            if (index >= end) {
                break;
            }
            int row0 = t * TILE_ROWS;
            int rows = m - row0 < TILE_ROWS ? m - row0 : TILE_ROWS;
            tile(packed, pairs, m, row0, rows, p, out, poly);
        }
    }
}

static long lower_tiles(int m) {
    int panels = (m + PANEL - 1) / PANEL;
    long total = 0;
    for (int p = 0; p < panels; p++) {
        total += row_tiles(m) - p * PANEL / TILE_ROWS;
    }
    return total;
}

static void self_product(const uint16_t *x, int m, int k, uint16_t *out, uint16_t *packed, int threads,
                         const epilogue *poly) {
    int pairs = (k + 1) / 2;
    int panels = (m + PANEL - 1) / PANEL;
    long total = lower_tiles(m);
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        int n = omp_get_num_threads();
        muon_bf16_pack_panels(x, m, k, packed, (int) ((long) panels * t / n), (int) ((long) panels * (t + 1) / n));
#pragma omp barrier
        /* Equal tile counts: every tile is the same work (k pairs by 8 × 32). */
        tiles(packed, pairs, m, out, poly, total * t / n, total * (t + 1) / n);
    }
}

/*
 * The normalisation before a bfloat16 iteration, out = g / max(safety·‖g‖_F, eps), in two passes over bfloat16
 * instead of libtorch's four over float32 copies (the norm with dtype float32 casts g to a float32 copy, and the
 * quotient casts g again and its result back). The norm: each source row's squares summed in double in 16 fixed
 * lanes, the rows summed in order, so the same bits for any thread count; every square of a bfloat16 is exact in
 * double, so the sum is closer to the true norm than libtorch's float32 sum, to which it can differ in the last
 * bit. The quotient as libtorch forms it: the norm rounded to float32, times safety in float32 (unless 1), at least
 * eps, g divided by it in float32, rounded to bfloat16 to nearest even.
 */
static inline __attribute__((always_inline)) double row_squares(const uint16_t *g, int n) {
    double lanes[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int j = 0; j < 16; j++) {
            float v = muon_bf16_value(g[i + j]);
            lanes[j] += (double) v * (double) v;
        }
    }
    for (int j = 0; i < n; i++, j++) {
        float v = muon_bf16_value(g[i]);
        lanes[j] += (double) v * (double) v;
    }
    double sum = 0.0;
    for (int j = 0; j < 16; j++) {
        sum += lanes[j];
    }
    return sum;
}

static inline __attribute__((always_inline)) void scale_rows(const uint16_t *g, int source_rows, int source_cols,
                                                             int transposed, float denominator, uint16_t *out,
                                                             long first, long end) {
    if (!transposed) {
        for (long i = first; i < end; i++) {
            out[i] = muon_bf16_round(muon_bf16_value(g[i]) / denominator);
        }
        return;
    }
    /* out (source_cols × source_rows) is g transposed: 32 × 32 blocks, this thread's share of them. */
    for (long b = first; b < end; b++) {
        muon_block k = muon_block_at(b, source_rows, source_cols, 32);
        for (long c = k.col0; c < k.col0 + k.cols; c++) {
            for (long r = k.row0; r < k.row0 + k.rows; r++) {
                float v = muon_bf16_value(g[(size_t) r * source_cols + c]);
                out[(size_t) c * source_rows + r] = muon_bf16_round(v / denominator);
            }
        }
    }
}

#define NORMALIZE_VARIANT(name, target)                                                                           \
    target static double name##_squares(const uint16_t *g, int n) {                                              \
        return row_squares(g, n);                                                                                \
    }                                                                                                            \
    target static void name##_scale(const uint16_t *g, int source_rows, int source_cols, int transposed,        \
                                    float denominator, uint16_t *out, long first, long end) {                   \
        scale_rows(g, source_rows, source_cols, transposed, denominator, out, first, end);                       \
    }

NORMALIZE_VARIANT(normalize_avx512, KERNEL)
NORMALIZE_VARIANT(normalize_avx2, __attribute__((target("avx2,fma"))))

static int normalize_bf16(int variant, const uint16_t *g, int m, int n, int transposed, uint16_t *out, int threads,
                          double safety, double eps) {
    int source_rows = transposed ? n : m;
    int source_cols = transposed ? m : n;
    double *row_sums = malloc((size_t) (source_rows > 0 ? source_rows : 1) * sizeof(double));
    if (row_sums == NULL) {
        return 0;
    }
    int avx2 = variant == MUON_VARIANT_AVX2;
    float denominator = 1.0f;
    long units = transposed ? (long) ((source_rows + 31) / 32) * ((source_cols + 31) / 32) : (long) m * n;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        int parts = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int r = 0; r < source_rows; r++) {
            const uint16_t *row = g + (size_t) r * source_cols;
            row_sums[r] = avx2 ? normalize_avx2_squares(row, source_cols) : normalize_avx512_squares(row, source_cols);
        }
#pragma omp single
        {
            double sum = 0.0;
            for (int r = 0; r < source_rows; r++) {
                sum += row_sums[r];
            }
            float norm = (float) sqrt(sum);
            if (safety != 1.0) {
                norm *= (float) safety;
            }
            float floor = (float) eps;
            denominator = norm > floor ? norm : floor;
        }
        long first = units * t / parts;
        long end = units * (t + 1) / parts;
        if (avx2) {
            normalize_avx2_scale(g, source_rows, source_cols, transposed, denominator, out, first, end);
        } else {
            normalize_avx512_scale(g, source_rows, source_cols, transposed, denominator, out, first, end);
        }
    }
    free(row_sums);
    return 1;
}

int muon_variant_supported(int variant) {
    __builtin_cpu_init();
    if (variant == MUON_VARIANT_AVX512) {
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
               && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    }
    if (variant == MUON_VARIANT_AVX2) {
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return 0;
}

/* Whether this CPU and OS run the variant (libgcc's probe also checks that the OS saves the vector registers): the
 * one probe of dev.muon.orthogonalize.NativeLibrary, the loader every Java face shares. */
JNIEXPORT jboolean JNICALL Java_dev_muon_orthogonalize_NativeLibrary_supports(JNIEnv *env, jclass cls, jint variant) {
    (void) env;
    (void) cls;
    return muon_variant_supported(variant) ? JNI_TRUE : JNI_FALSE;
}

/* Bytes of packing scratch that one call of bfloat16SelfProduct needs for an m × k matrix. */
JNIEXPORT jlong JNICALL Java_dev_muon_orthogonalize_NativeKernels_bfloat16PackBytes(JNIEnv *env, jclass cls,
                                                                                      jint variant, jint m, jint k) {
    (void) env;
    (void) cls;
    if (variant == MUON_VARIANT_AVX2) {
        return (jlong) muon_bf16_avx2_pack_bytes(m, k);
    }
    int panels = (m + PANEL - 1) / PANEL;
    return (jlong) ((size_t) panels * panel_elems((k + 1) / 2) * sizeof(uint16_t));
}

/*
 * out = g / max(safety·‖g‖_F, eps) for the m × n bfloat16 out, g holding m × n values or, with transposed, the
 * n × m transpose; both contiguous, not overlapping. False (nothing written) if its few bytes of scratch cannot be
 * had: the caller then normalises on libtorch.
 */
JNIEXPORT jboolean JNICALL Java_dev_muon_orthogonalize_NativeKernels_bfloat16Normalize(
        JNIEnv *env, jclass cls, jint variant, jlong g, jint m, jint n, jboolean transposed, jlong out, jint threads,
        jdouble safety, jdouble eps) {
    (void) env;
    (void) cls;
    return normalize_bf16(variant, (const uint16_t *) (intptr_t) g, m, n, transposed == JNI_TRUE,
                          (uint16_t *) (intptr_t) out, threads, safety, eps) ? JNI_TRUE : JNI_FALSE;
}

/*
 * out[i] = x[i]·x[i]ᵀ for i < batch: x is batch × m × k and out batch × m × m, both contiguous bfloat16; packed
 * has bfloat16PackBytes(variant, m, k) bytes. The caller checked shapes, dtypes, contiguity and CPU support.
 */
JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_bfloat16SelfProduct(
        JNIEnv *env, jclass cls, jint variant, jlong x, jint batch, jint m, jint k, jlong out, jlong packed,
        jint threads) {
    (void) env;
    (void) cls;
    epilogue none = {NULL, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < batch; i++) {
        const uint16_t *xi = (const uint16_t *) (intptr_t) x + (size_t) i * m * k;
        uint16_t *outi = (uint16_t *) (intptr_t) out + (size_t) i * m * m;
        if (variant == MUON_VARIANT_AVX2) {
            muon_bf16_avx2_self_product(xi, m, k, outi, (void *) (intptr_t) packed, threads, NULL, 0.0f, 0.0f, 0.0f);
        } else {
            self_product(xi, m, k, outi, (uint16_t *) (intptr_t) packed, threads, &none);
        }
    }
}

/*
 * out[i] = a·I + b·s[i] + c·s[i]·s[i] for i < batch, each s[i] an exactly symmetric m × m matrix (the product is
 * formed as s·sᵀ): s and out are batch × m × m contiguous bfloat16, not overlapping; packed has
 * bfloat16PackBytes(variant, m, m) bytes. The result is exactly symmetric.
 */
JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_bfloat16Polynomial(
        JNIEnv *env, jclass cls, jint variant, jlong s, jint batch, jint m, jlong out, jlong packed, jint threads,
        jfloat a, jfloat b, jfloat c) {
    (void) env;
    (void) cls;
    for (int i = 0; i < batch; i++) {
        const uint16_t *si = (const uint16_t *) (intptr_t) s + (size_t) i * m * m;
        uint16_t *outi = (uint16_t *) (intptr_t) out + (size_t) i * m * m;
        if (variant == MUON_VARIANT_AVX2) {
            muon_bf16_avx2_self_product(si, m, m, outi, (void *) (intptr_t) packed, threads, si, a, b, c);
        } else {
            epilogue poly = {si, a, b, c};
            self_product(si, m, m, outi, (uint16_t *) (intptr_t) packed, threads, &poly);
        }
    }
}
