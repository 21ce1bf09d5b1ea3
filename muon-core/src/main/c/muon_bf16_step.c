/*
 * One whole bfloat16 step of the symmetric Newton–Schulz iteration in one OpenMP region, for the AVX-512 variant
 * (AVX512_BF16's vdpbf16ps), called through JNI from dev.muon.orthogonalize.NativeKernels:
 *
 *   A  = X·Xᵀ                      (half product: the tiles on and below the diagonal)
 *   B  = a·I + b·A + c·A·A         (half product of A, the sum formed in float32 and rounded once)
 *   X' = B·X                       (full product)
 *
 * for a row-major m × n bfloat16 X, each product accumulated in float32 over its whole inner dimension and rounded
 * once to bfloat16. The two half products are muon_cpu_kernels.c's (same tiles, same order, same bits); what this
 * file adds is what runs around and after them:
 *
 *   - A and B are never mirrored. Their tiles store the blocks on and below the diagonal, row-major, as they leave
 *     the registers (the half-product kernel writes each value to both of its places, a 2-byte store a row apart
 *     for every value: at 768² on two threads that took 12% of its time). The next product's packing reads a block
 *     above the diagonal from its stored mirror instead (pack_symmetric_panels).
 *   - X' = B·X runs here too, on the same tiles, instead of libtorch's GEMM (oneDNN): no second library call, no
 *     bfloat16 copy of B for it, and the whole step is one parallel region (OMP_WAIT_POLICY=PASSIVE wakes the
 *     pool once per region).
 *
 * Why only the AVX-512 variant: without vdpbf16ps the products run in float32 on widened values (the AVX2 half
 * product), and its full product would be libtorch's float32 GEMM's rate at best, which MatrixProducts already
 * runs; the AVX2 variant keeps the half products with the full product on libtorch (documented in docs/api.md).
 *
 * Every value is one tile's sum in a fixed order, so the result's bits do not depend on the thread count. The order
 * is vdpbf16ps's: for each pair of the inner dimension (2q, 2q + 1), acc = fma(x[2q+1], y[2q+1], acc), then
 * acc = fma(x[2q], y[2q], acc), each rounded to float32 to nearest even, subnormal inputs read as zero and subnormal
 * results flushed to zero (Intel's pseudocode; measured on Zen 4); an odd inner dimension's last pair has a zero
 * second half. Each result is rounded to bfloat16 by vcvtneps2bf16 (to nearest even, subnormals to zero, NaN kept
 * quiet). The polynomial's sum: fma(p, c, s·b), then + a on the diagonal, each in float32. NativeKernelsTest
 * recomputes all of it in Java, in this order, and compares the bits.
 *
 * Built without AVX-512 flags: only the functions marked KERNEL use the instructions, and Java calls them only after
 * muon_variant_supported() said yes.
 */
#include <jni.h>
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "muon_kernels.h"

#define KERNEL __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* muon_cpu_kernels.c's layout: panels of PANEL rows; for each pair of columns (2q, 2q + 1) the PANEL rows' two values
 * side by side (one 64-byte load is 16 rows' pairs, one row's pair is a 32-bit broadcast). */
#define PANEL MUON_BF16_PANEL
/* Rows of out per register tile: 8 × 32 float32 sums in 16 zmm registers (single-threaded, the half product's tile
 * runs at the core's vdpbf16ps rate: 2.08 ms for 768³/2 multiply-adds, ~100 G per second, docs/benchmarks.md). */
#define TILE_ROWS MUON_BF16_TILE_ROWS

static inline int min_int(int a, int b) {
    return a < b ? a : b;
}

static inline int panels_of(int rows) {
    return (rows + PANEL - 1) / PANEL;
}

/* uint16 values of one panel over `pairs` pairs. */
static inline size_t panel_elems(int pairs) {
    return (size_t) pairs * PANEL * 2;
}

static inline size_t align64(size_t bytes) {
    return (bytes + 63) / 64 * 64;
}

/* The scratch's parts, in bytes from its 64-byte aligned start. */
typedef struct {
    size_t x_panels;    /* X's rows as panels (pairs along X's columns): X·Xᵀ's operand */
    size_t x_columns;   /* X's columns as panels (pairs along X's rows): B·X's right operand */
    size_t symmetric;   /* A's, then B's rows as panels (pairs along their columns) */
    size_t total;
} scratch_layout;

static scratch_layout layout_of(int m, int n) {
    scratch_layout l;
    size_t x_panels = (size_t) panels_of(m) * panel_elems((n + 1) / 2) * sizeof(uint16_t);
    size_t x_columns = (size_t) panels_of(n) * panel_elems((m + 1) / 2) * sizeof(uint16_t);
    size_t symmetric = (size_t) panels_of(m) * panel_elems((m + 1) / 2) * sizeof(uint16_t);
    l.x_panels = 0;
    l.x_columns = align64(x_panels);
    l.symmetric = l.x_columns + align64(x_columns);
    l.total = l.symmetric + align64(symmetric) + 64;
    return l;
}

/* Lanes [0, n) of 32: the mask of a partial row of bfloat16 values. */
static inline __mmask32 first_lanes32(int n) {
    return n >= 32 ? (__mmask32) 0xFFFFFFFFu : n <= 0 ? (__mmask32) 0 : (__mmask32) ((1u << n) - 1u);
}

static inline __mmask16 first_lanes16(int n) {
    return n >= 16 ? (__mmask16) 0xFFFF : n <= 0 ? (__mmask16) 0 : (__mmask16) ((1u << n) - 1u);
}

/*
 * Pairs q in [q0, q_end) of a panel whose rows are columns col0 .. col0 + 31 of src (rows × cols, leading dimension
 * ld), the pair along src's rows: dst's pair (q, r) = (src[2q][col0 + r], src[2q + 1][col0 + r]), zero past src's
 * rows and columns. Two rows interleaved by 16-bit permutes: the layout a symmetric matrix's rows take above its
 * diagonal, and B·X's right operand.
 */
KERNEL static void pack_row_pairs(const uint16_t *src, long ld, int rows, int cols, int col0, int q0, int q_end,
                                  uint16_t *dst) {
    /* out0: r = 0..15, out1: r = 16..31; index 32 + i picks the second source. */
    static const uint16_t low_index[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                           8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    static const uint16_t high_index[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                            24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
    __m512i lo = _mm512_loadu_si512(low_index);
    __m512i hi = _mm512_loadu_si512(high_index);
    __mmask32 mask = first_lanes32(cols - col0);
    for (int q = q0; q < q_end; q++) {
        __m512i even = 2 * q < rows ? _mm512_maskz_loadu_epi16(mask, src + (size_t) (2 * q) * ld + col0)
                                    : _mm512_setzero_si512();
        __m512i odd = 2 * q + 1 < rows ? _mm512_maskz_loadu_epi16(mask, src + (size_t) (2 * q + 1) * ld + col0)
                                       : _mm512_setzero_si512();
        uint16_t *d = dst + (size_t) q * PANEL * 2;
        _mm512_storeu_si512(d, _mm512_permutex2var_epi16(even, lo, odd));
        _mm512_storeu_si512(d + PANEL, _mm512_permutex2var_epi16(even, hi, odd));
    }
}

/*
 * Pairs q in [q0, q0 + 16) (those below pairs) of panel p of src, the pair along src's columns: dst's pair (q, r) =
 * (src[row][2q], src[row][2q + 1]) for row = p·PANEL + r, zero past src's rows and columns (an odd column count's
 * last pair). 16 rows by 16 pairs at a time, transposed in registers (a pair is 32 bits).
 */
KERNEL static void pack_column_pairs(const uint16_t *src, long ld, int rows, int cols, int p, int q0, int pairs,
                                     uint16_t *dst) {
    uint32_t *d = (uint32_t *) dst;
    __mmask32 mask = first_lanes32(cols - 2 * q0);
    int count = min_int(16, pairs - q0);
    for (int half = 0; half < PANEL; half += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) {
            int row = p * PANEL + half + i;
            r[i] = row < rows ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, src + (size_t) row * ld + 2 * q0))
                              : _mm512_setzero_ps();
        }
        muon_transpose16(r);
        for (int j = 0; j < count; j++) {
            _mm512_storeu_ps(d + (size_t) (q0 + j) * PANEL + half, r[j]);
        }
    }
}

/*
 * Panel p of the symmetric m × m s, of which only the blocks on and below the diagonal are stored (PANEL × PANEL
 * blocks, row-major, as the tiles below write them): pairs in column blocks up to p's own read rows of p's stored
 * blocks; pairs in column blocks past it read the mirror, columns of p in the rows 2q, 2q + 1 below it.
 */
KERNEL static void pack_symmetric_panel(const uint16_t *s, int m, int p, uint16_t *dst) {
    int pairs = (m + 1) / 2;
    for (int q0 = 0; q0 < pairs; q0 += PANEL / 2) {
        int block = q0 * 2 / PANEL;
        if (block <= p) {
            pack_column_pairs(s, m, m, m, p, q0, pairs, dst);
        } else {
            pack_row_pairs(s, m, m, m, p * PANEL, q0, min_int(q0 + PANEL / 2, pairs), dst);
        }
    }
}

/*
 * One register tile: out[r][i] for r < rows, i < cols (leading dimension ld) from TILE_ROWS rows of a left panel
 * (left: at the tile's first row's pair) against a right panel, over `pairs` pairs. s (NULL: a plain product) is the
 * polynomial's operand at the tile's origin, same leading dimension; diagonal is the tile column that its row 0's
 * diagonal entry falls in (row0 − col0).
 */
KERNEL static inline __attribute__((always_inline)) void tile(const uint16_t *left, const uint16_t *right, int pairs,
                                                              uint16_t *out, long ld, int rows, int cols,
                                                              const uint16_t *s, float a, float b, float c,
                                                              int diagonal) {
    __m512 acc[TILE_ROWS][2];
    muon_bf16_tile_sums(left, right, pairs, acc);
    __mmask16 mask_lo = first_lanes16(cols);
    __mmask16 mask_hi = first_lanes16(cols - 16);
#pragma GCC unroll 8
    for (int r = 0; r < TILE_ROWS; r++) {
        if (r >= rows) {
            break;
        }
        if (s != NULL) {
            __m512 vb = _mm512_set1_ps(b);
            __m512 vc = _mm512_set1_ps(c);
            for (int h = 0; h < 2; h++) {
                __m256i raw = _mm256_maskz_loadu_epi16(h == 0 ? mask_lo : mask_hi, s + (size_t) r * ld + 16 * h);
                __m512 sv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
                acc[r][h] = _mm512_fmadd_ps(acc[r][h], vc, _mm512_mul_ps(sv, vb));
                int lane = diagonal + r - 16 * h;
                if (lane >= 0 && lane < 16) {
                    acc[r][h] = _mm512_mask_add_ps(acc[r][h], (__mmask16) (1u << lane), acc[r][h], _mm512_set1_ps(a));
                }
            }
        }
        _mm256_mask_storeu_epi16(out + (size_t) r * ld, mask_lo, (__m256i) _mm512_cvtneps_pbh(acc[r][0]));
        _mm256_mask_storeu_epi16(out + (size_t) r * ld + 16, mask_hi, (__m256i) _mm512_cvtneps_pbh(acc[r][1]));
    }
}

/* Row tiles of an m-row result. */
static inline int row_tiles(int m) {
    return (m + TILE_ROWS - 1) / TILE_ROWS;
}

/* The tiles on and below the diagonal of an m × m result, numbered column panel by column panel: panel p meets the
 * row tiles from its own first row down. */
static long lower_tile_count(int m) {
    long total = 0;
    for (int p = 0; p < panels_of(m); p++) {
        total += row_tiles(m) - p * PANEL / TILE_ROWS;
    }
    return total;
}

/*
 * This thread's share [first, end) of the tiles on and below the diagonal of the m × m out = packed·packedᵀ over
 * `pairs` pairs (packed: the operand's panels), stored row-major, blocks above the diagonal left alone; s (NULL for
 * none) the polynomial's operand, stored the same way.
 */
KERNEL static void lower_tiles(const uint16_t *packed, int pairs, int m, uint16_t *out, const uint16_t *s, float a,
                               float b, float c, long first, long end) {
    long index = 0;
    size_t per_panel = panel_elems(pairs);
    for (int p = 0; p < panels_of(m) && index < end; p++) {
        int start = p * PANEL / TILE_ROWS;
        long count = row_tiles(m) - start;
        if (index + count <= first) {
            index += count;
            continue;
        }
        int col0 = p * PANEL;
        int cols = min_int(m - col0, PANEL);
        const uint16_t *right = packed + (size_t) p * per_panel;
        for (int t = start; t < row_tiles(m) && index < end; t++, index++) {
            if (index < first) {
                continue;
            }
            int row0 = t * TILE_ROWS;
            const uint16_t *left = packed + (size_t) (row0 / PANEL) * per_panel + (size_t) (row0 % PANEL) * 2;
            size_t at = (size_t) row0 * m + col0;
            if (s != NULL) {
                tile(left, right, pairs, out + at, m, min_int(m - row0, TILE_ROWS), cols, s + at, a, b, c,
                     row0 - col0);
            } else {
                tile(left, right, pairs, out + at, m, min_int(m - row0, TILE_ROWS), cols, NULL, 0.0f, 0.0f, 0.0f,
                     0);
            }
        }
    }
}

/*
 * This thread's share [first, end) of the tiles of the m × n out = left·right: left the m × m operand's panels,
 * right the panels of the n columns, both over `pairs` pairs. Right panel by right panel, so that consecutive tiles
 * share it (in L2) and stream the left rows (in L1 per tile).
 */
KERNEL static void full_tiles(const uint16_t *left, const uint16_t *right, int pairs, int m, int n, uint16_t *out,
                              long first, long end) {
    size_t per_panel = panel_elems(pairs);
    int tiles = row_tiles(m);
    for (long index = first; index < end; index++) {
        int p = (int) (index / tiles);
        int row0 = (int) (index % tiles) * TILE_ROWS;
        int col0 = p * PANEL;
        tile(left + (size_t) (row0 / PANEL) * per_panel + (size_t) (row0 % PANEL) * 2, right + (size_t) p * per_panel,
             pairs, out + (size_t) row0 * n + col0, n, min_int(m - row0, TILE_ROWS), min_int(n - col0, PANEL), NULL,
             0.0f, 0.0f, 0.0f, 0);
    }
}

static inline long share(long total, int part, int parts) {
    return total * part / parts;
}

/*
 * out = B·X with A = X·Xᵀ and B = a·I + b·A + c·A·A, for the row-major m × n bfloat16 x; a_store and b_store are
 * m × m bfloat16 buffers (their blocks on and below the diagonal are written), scratch has
 * muon_bf16_step_bytes(m, n) bytes. out overlaps nothing.
 */
static void symmetric_step(const uint16_t *x, int m, int n, uint16_t *a_store, uint16_t *b_store, uint16_t *out,
                           void *scratch, int threads, float a, float b, float c) {
    scratch_layout l = layout_of(m, n);
    uint8_t *base = (uint8_t *) (((uintptr_t) scratch + 63) & ~(uintptr_t) 63);
    uint16_t *x_panels = (uint16_t *) (base + l.x_panels);
    uint16_t *x_columns = (uint16_t *) (base + l.x_columns);
    uint16_t *sym = (uint16_t *) (base + l.symmetric);
    int pairs_n = (n + 1) / 2;
    int pairs_m = (m + 1) / 2;
    int panels_m = panels_of(m);
    int panels_n = panels_of(n);
    long lower = lower_tile_count(m);
    long full = (long) row_tiles(m) * panels_n;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        int parts = omp_get_num_threads();
        /* X's two packings: panels of its rows for X·Xᵀ, panels of its columns for B·X. */
        muon_bf16_pack_panels(x, m, n, x_panels, (int) share(panels_m, t, parts), (int) share(panels_m, t + 1, parts));
        for (int p = (int) share(panels_n, t, parts); p < (int) share(panels_n, t + 1, parts); p++) {
            pack_row_pairs(x, n, m, n, p * PANEL, 0, pairs_m, x_columns + (size_t) p * panel_elems(pairs_m));
        }
#pragma omp barrier
        lower_tiles(x_panels, pairs_n, m, a_store, NULL, 0.0f, 0.0f, 0.0f, share(lower, t, parts),
                    share(lower, t + 1, parts));
#pragma omp barrier
        for (int p = (int) share(panels_m, t, parts); p < (int) share(panels_m, t + 1, parts); p++) {
            pack_symmetric_panel(a_store, m, p, sym + (size_t) p * panel_elems(pairs_m));
        }
#pragma omp barrier
        lower_tiles(sym, pairs_m, m, b_store, a_store, a, b, c, share(lower, t, parts), share(lower, t + 1, parts));
#pragma omp barrier
        for (int p = (int) share(panels_m, t, parts); p < (int) share(panels_m, t + 1, parts); p++) {
            pack_symmetric_panel(b_store, m, p, sym + (size_t) p * panel_elems(pairs_m));
        }
#pragma omp barrier
        full_tiles(sym, x_columns, pairs_m, m, n, out, share(full, t, parts), share(full, t + 1, parts));
    }
}

size_t muon_bf16_step_bytes(int m, int n) {
    return layout_of(m, n).total;
}

/* Bytes of scratch one bfloat16SymmetricStep call needs for an m × n X. */
JNIEXPORT jlong JNICALL Java_dev_muon_orthogonalize_NativeKernels_bfloat16SymmetricStepBytes(JNIEnv *env, jclass cls,
                                                                                              jint m, jint n) {
    (void) env;
    (void) cls;
    return (jlong) muon_bf16_step_bytes(m, n);
}

/*
 * out = (a·I + b·A + c·A·A)·x with A = x·xᵀ, for the contiguous m × n bfloat16 x (AVX-512 variant only); aStore
 * and bStore are m × m bfloat16 buffers it overwrites, scratch has bfloat16SymmetricStepBytes(m, n) bytes; out
 * overlaps none of them. The caller checked shapes, dtypes, contiguity and CPU support.
 */
JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_bfloat16SymmetricStep(
        JNIEnv *env, jclass cls, jlong x, jint m, jint n, jlong aStore, jlong bStore, jlong out, jlong scratch,
        jint threads, jfloat a, jfloat b, jfloat c) {
    (void) env;
    (void) cls;
    symmetric_step((const uint16_t *) (intptr_t) x, m, n, (uint16_t *) (intptr_t) aStore,
                   (uint16_t *) (intptr_t) bStore, (uint16_t *) (intptr_t) out, (void *) (intptr_t) scratch, threads,
                   a, b, c);
}
