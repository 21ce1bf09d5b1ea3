/*
 * muon-core's kernels for CPUs with AVX2 and FMA but without AVX512_BF16 (Intel Haswell to Alder Lake and its
 * successors' client parts, AMD Zen 1 to 3; forced on any CPU by -Ddev.muon.native.isa=avx2): the float32
 * products' micro-kernels, which the blocked driver in muon_f32_kernels.c runs exactly as it runs the AVX-512 ones,
 * and a bfloat16 half product.
 *
 * The register tile is 6 output rows × 16 output columns: 12 ymm accumulators, two registers for the right panel's
 * 16 values and one for the broadcast, 15 of AVX2's 16 ymm registers. Per column of the inner dimension it does 12
 * fused multiply-adds for 2 loads and 6 broadcasts (a broadcast from memory takes a load port only): 0.67 loads per
 * FMA, inside the two loads a cycle that every AVX2 core issues beside its two FMAs (Haswell to Zen 4), so the FMA
 * ports bound it. Counted against the alternatives:
 *   4 × 24: 12 accumulators, 3 loads and 4 broadcasts, 0.58 loads per FMA, but all 16 registers (no room for a
 *           spill) and a 24-row panel that the 8 × 8 register transposes of the pack do not halve;
 *   8 × 8:  8 accumulators, 1 load and 8 broadcasts, 1.13 loads per FMA, and 8 dependency chains where two FMA
 *           ports of 4 to 5 cycles' latency need 8 to 10 in flight.
 * 6 × 16 is also BLIS's Haswell sgemm micro-kernel. A packed panel of 16 rows splits into tiles of 6, 6 and 4 rows
 * (the 4-row tile: 8 FMAs for 2 loads and 4 broadcasts), 0.69 loads per FMA over the panel; the panels are packed
 * by 8 × 8 register transposes and the mirror copies 8 × 8 blocks the same way.
 *
 * The float32 pieces compute every value in the AVX-512 pieces' order (each output's products summed over the
 * inner dimension in order with one FMA each, one chain across the blocks, so their different depths do not show;
 * the same epilogue; the norm's eight double lanes reduced as _mm512_reduce_add_pd does), so the two variants give
 * the same bits: tested.
 *
 * The bfloat16 half product widens each value to float32 once, in the pack (a bfloat16 is a float32's upper half:
 * a 16-bit shift), and runs the same 6 × 16 tile over the whole inner dimension, float32 accumulation by FMA,
 * rounded once to bfloat16 (round to nearest even, NaN kept quiet, subnormals kept): what oneDNN does on CPUs
 * without AVX512_BF16. Its bound is the AVX-512 kernel's (a k-term float32 sum, one rounding), its bits are not
 * (vdpbf16ps adds each pair's two products in another order and flushes subnormals). It forms the tiles on and
 * above the diagonal and writes each value to both of its places, so the result is exactly symmetric; every value
 * is one tile's sum in a fixed order, so its bits do not depend on the thread count.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "muon_kernels.h"

#define KERNEL __attribute__((target("avx2,fma")))

/* Rows per packed panel and output columns per tile: two ymm registers of floats. */
#define PANEL 16
/* The taller of the two tiles. */
#define TILE_MAX 6
/* The deepest block of the inner dimension: a left tile's 6 × 256 floats and the right panel's 16 × 256 stay in L1
 * (blocks of 768, the AVX-512 depth, ran the full product at 768 × 3072 2–3% slower here, docs/benchmarks.md). */
#define MAX_DEPTH 256

static inline int min_int(int a, int b) {
    return a < b ? a : b;
}

/* All ones in lanes [0, n): the mask of a partial load or store of n floats. */
KERNEL static inline __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* n floats from p, the lanes past n zero, nothing read past them. */
KERNEL static inline __m256 load_part(const float *p, int n) {
    if (n >= 8) {
        return _mm256_loadu_ps(p);
    }
    if (n <= 0) {
        return _mm256_setzero_ps();
    }
    return _mm256_maskload_ps(p, lanes_below(n));
}

/* The first n lanes of v to p (a masked store only at the edges: slow on some AMD cores). */
KERNEL static inline void store_part(float *p, __m256 v, int n) {
    if (n >= 8) {
        _mm256_storeu_ps(p, v);
    } else if (n > 0) {
        _mm256_maskstore_ps(p, lanes_below(n), v);
    }
}

/* In-register transpose of 8 rows of 8 floats: r[c] becomes column c. */
KERNEL static inline void transpose8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* s[4h + c], 128-bit lane L: rows 4h .. 4h+3 of column c + 4L */
    __m256 s[8];
    for (int h = 0; h < 2; h++) {
        s[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        s[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
        s[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        s[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
}

/* packed[q·PANEL + r] = src[(row0 + r)·ld + q0 + q]: rows of src become a panel's columns (rows past rows: zero). */
KERNEL static void pack_rows(const float *src, long ld, int row0, int rows, int q0, int depth, float *packed) {
    for (int half = 0; half < 2; half++) {
        for (int qb = 0; qb < depth; qb += 8) {
            int width = min_int(depth - qb, 8);
            __m256 r[8];
            for (int i = 0; i < 8; i++) {
                int row = half * 8 + i;
                r[i] = row < rows ? load_part(src + (long) (row0 + row) * ld + q0 + qb, width)
                                  : _mm256_setzero_ps();
            }
            transpose8(r);
            for (int c = 0; c < width; c++) {
                _mm256_store_ps(packed + (long) (qb + c) * PANEL + half * 8, r[c]);
            }
        }
    }
}

/*
 * The register tile's sums: sums[j][i] = Σ_q left[q·PANEL + j]·right[q·PANEL + i] for j < tile_rows, i < PANEL.
 * Returned through memory, indexed by constants only: an accumulator read at a variable index by the caller kept
 * GCC 12 from holding them in registers inside the loop (it stored all twelve on every column).
 */
KERNEL static inline __attribute__((always_inline)) void tile_sums(const int tile_rows, int depth,
                                                                   const float *restrict right,
                                                                   const float *restrict left,
                                                                   const float *start, long ld, int rows, int cols,
                                                                   float sums[TILE_MAX][PANEL]) {
    __m256 lo[TILE_MAX], hi[TILE_MAX];
#pragma GCC unroll 6
    for (int j = 0; j < tile_rows; j++) {
        int from_start = start != NULL && j < rows;
        lo[j] = from_start ? load_part(start + (long) j * ld, cols) : _mm256_setzero_ps();
        hi[j] = from_start ? load_part(start + (long) j * ld + 8, cols - 8) : _mm256_setzero_ps();
    }
    for (int q = 0; q < depth; q++) {
        __m256 r0 = _mm256_load_ps(right);
        __m256 r1 = _mm256_load_ps(right + 8);
#pragma GCC unroll 6
        for (int j = 0; j < tile_rows; j++) {
            __m256 l = _mm256_broadcast_ss(left + j);
            lo[j] = _mm256_fmadd_ps(r0, l, lo[j]);
            hi[j] = _mm256_fmadd_ps(r1, l, hi[j]);
        }
        right += PANEL;
        left += PANEL;
    }
#pragma GCC unroll 6
    for (int j = 0; j < tile_rows; j++) {
        _mm256_store_ps(sums[j], lo[j]);
        _mm256_store_ps(sums[j] + 8, hi[j]);
    }
}

/* The register tile: out[j][i] (+)= Σ_q left[q·PANEL + j]·right[q·PANEL + i] for j < rows, i < cols. */
KERNEL static inline __attribute__((always_inline)) void tile_body(const int tile_rows, int depth,
                                                                   const float *restrict right,
                                                                   const float *restrict left, float *restrict out,
                                                                   long ld, int rows, int cols,
                                                                   const muon_f32_epilogue *e) {
    float sums[TILE_MAX][PANEL] __attribute__((aligned(32)));
    /* A later block of the inner dimension continues out's sums (the AVX-512 tile's order). */
    tile_sums(tile_rows, depth, right, left, e->accumulate ? out : NULL, ld, rows, cols, sums);
    for (int j = 0; j < tile_rows && j < rows; j++) {
        float *row = out + (long) j * ld;
        __m256 v0 = _mm256_load_ps(sums[j]);
        __m256 v1 = _mm256_load_ps(sums[j] + 8);
        if (e->s != NULL) {
            const float *s = e->s + (long) j * ld;
            __m256 b = _mm256_set1_ps(e->b);
            __m256 c = _mm256_set1_ps(e->c);
            v0 = _mm256_fmadd_ps(b, load_part(s, cols), _mm256_mul_ps(c, v0));
            v1 = _mm256_fmadd_ps(b, load_part(s + 8, cols - 8), _mm256_mul_ps(c, v1));
        }
        store_part(row, v0, cols);
        store_part(row + 8, v1, cols - 8);
        if (e->s != NULL) {
            int i = e->diagonal + j;
            if (i >= 0 && i < cols) {
                row[i] += e->a;
            }
        }
    }
}

KERNEL static void tile6(int depth, const float *right, const float *left, float *out, long ld, int rows, int cols,
                         const muon_f32_epilogue *e) {
    tile_body(6, depth, right, left, out, ld, rows, cols, e);
}

KERNEL static void tile4(int depth, const float *right, const float *left, float *out, long ld, int rows, int cols,
                         const muon_f32_epilogue *e) {
    tile_body(4, depth, right, left, out, ld, rows, cols, e);
}

static void tile(int tile_rows, int depth, const float *right, const float *left, float *out, long ld, int rows,
                 int cols, const muon_f32_epilogue *e) {
    if (tile_rows == 6) {
        tile6(depth, right, left, out, ld, rows, cols, e);
    } else {
        tile4(depth, right, left, out, ld, rows, cols, e);
    }
}

/* out[i][j] = out[j][i] below the diagonal: 8 × 8 blocks of the upper triangle transposed in registers, block rows
 * dealt round-robin to the threads. */
KERNEL static void mirror_upper(float *out, int m, int thread, int threads) {
    int blocks = (m + 7) / 8;
    for (int bi = thread; bi < blocks; bi += threads) {
        int i0 = bi * 8;
        int rows = min_int(8, m - i0);
        for (int bj = 0; bj < bi; bj++) {
            int j0 = bj * 8;
            __m256 r[8];
            for (int t = 0; t < 8; t++) {
                r[t] = load_part(out + (long) (j0 + t) * m + i0, rows);
            }
            transpose8(r);
            for (int c = 0; c < rows; c++) {
                _mm256_storeu_ps(out + (long) (i0 + c) * m + j0, r[c]);
            }
        }
        for (int i = i0; i < i0 + rows; i++) {
            for (int j = i0; j < i; j++) {
                out[(long) i * m + j] = out[(long) j * m + i];
            }
        }
    }
}

/* Σ g[i]² of n floats in double: eight lanes (as one zmm register holds them), reduced as _mm512_reduce_add_pd
 * reduces them (upper four plus lower four, then upper two plus lower two, then the pair), then the tail. */
KERNEL static double sum_of_squares(const float *g, int n) {
    __m256d lower = _mm256_setzero_pd();
    __m256d upper = _mm256_setzero_pd();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(g + i));
        __m256d b = _mm256_cvtps_pd(_mm_loadu_ps(g + i + 4));
        lower = _mm256_fmadd_pd(a, a, lower);
        upper = _mm256_fmadd_pd(b, b, upper);
    }
    __m256d four = _mm256_add_pd(upper, lower);
    __m128d two = _mm_add_pd(_mm256_extractf128_pd(four, 1), _mm256_castpd256_pd128(four));
    double sum = _mm_cvtsd_f64(two) + _mm_cvtsd_f64(_mm_unpackhi_pd(two, two));
    for (; i < n; i++) {
        sum += (double) g[i] * g[i];
    }
    return sum;
}

/* out[i·n + j] = scale · g[j·m + i]: the m × n out from the n × m g, 8 × 8 blocks transposed in registers. */
KERNEL static void scale_transposed(const float *g, int m, int n, float scale, float *out, int first_block,
                                    int end_block) {
    __m256 s = _mm256_set1_ps(scale);
    for (int b = first_block; b < end_block; b++) {
        muon_block k = muon_block_at(b, n, m, 8);
        int j0 = (int) k.row0;
        int i0 = (int) k.col0;
        int rows = k.rows;
        int cols = k.cols;
        __m256 r[8];
        for (int t = 0; t < 8; t++) {
            r[t] = t < rows ? load_part(g + (long) (j0 + t) * m + i0, cols) : _mm256_setzero_ps();
        }
        transpose8(r);
        for (int c = 0; c < cols; c++) {
            store_part(out + (long) (i0 + c) * n + j0, _mm256_mul_ps(r[c], s), rows);
        }
    }
}

KERNEL static void scale_plain(const float *g, long first, long end, float scale, float *out) {
    __m256 s = _mm256_set1_ps(scale);
    long i = first;
    for (; i + 8 <= end; i += 8) {
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), s));
    }
    for (; i < end; i++) {
        out[i] = g[i] * scale;
    }
}

const muon_f32_isa muon_f32_avx2 = {
    PANEL, {0, 6, 12}, {6, 6, 4}, MAX_DEPTH, tile, pack_rows, mirror_upper, sum_of_squares, scale_transposed, 8,
    scale_plain,
};

/* ---- The bfloat16 half product ---- */

static float *aligned64(void *p) {
    return (float *) (((uintptr_t) p + 63) & ~(uintptr_t) 63);
}

static inline int panels_of(int rows) {
    return (rows + PANEL - 1) / PANEL;
}

size_t muon_bf16_avx2_pack_bytes(int m, int k) {
    return (size_t) panels_of(m) * PANEL * (size_t) k * sizeof(float) + 64;
}

/* bfloat16 to float32 of n values (at most 8), the lanes past n zero, nothing read past them. */
KERNEL static inline __m256 widen(const uint16_t *p, int n) {
    __m128i v;
    if (n >= 8) {
        v = _mm_loadu_si128((const __m128i *) p);
    } else {
        uint16_t part[8] = {0};
        if (n > 0) {
            memcpy(part, p, (size_t) n * sizeof(uint16_t));
        }
        v = _mm_loadu_si128((const __m128i *) part);
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}

/* float32 to bfloat16, round to nearest even (as c10::BFloat16 rounds): NaN stays a quiet NaN of its sign. */
KERNEL static inline __m128i narrow(__m256 v) {
    __m256i bits = _mm256_castps_si256(v);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF)));
    __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i upper = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
    /* Every lane is below 2^16, so the unsigned saturation of the pack changes nothing. */
    return _mm_packus_epi32(_mm256_castsi256_si128(upper), _mm256_extracti128_si256(upper, 1));
}

/* Panel p of the operand: its 16 rows' values as float32, column by column over the whole k (rows past m: zero). */
KERNEL static void pack_bf16_panel(const uint16_t *x, int m, int k, int p, float *packed) {
    for (int half = 0; half < 2; half++) {
        for (int qb = 0; qb < k; qb += 8) {
            int width = min_int(k - qb, 8);
            __m256 r[8];
            for (int i = 0; i < 8; i++) {
                int row = p * PANEL + half * 8 + i;
                r[i] = row < m ? widen(x + (size_t) row * k + qb, width) : _mm256_setzero_ps();
            }
            transpose8(r);
            for (int c = 0; c < width; c++) {
                _mm256_store_ps(packed + (size_t) (qb + c) * PANEL + half * 8, r[c]);
            }
        }
    }
}

/* The polynomial form's operands: out = a·I + b·s + c·(s·s); s is null for the plain product. */
typedef struct {
    const uint16_t *s;
    float a, b, c;
} bf16_epilogue;

/* Adds a to lane `lane` of v (none if lane is outside 0..7). */
KERNEL static inline __m256 add_in_lane(__m256 v, int lane, float a) {
    __m256 only = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                         _mm256_set1_epi32(lane)));
    return _mm256_blendv_ps(v, _mm256_add_ps(v, _mm256_set1_ps(a)), only);
}

/*
 * One tile: out's rows [row0, row0 + rows) against the 16 columns from col0 (cols of them inside out), over all k.
 * Values on and above the diagonal are stored at (row, col) and (col, row); the rest of a tile that crosses the
 * diagonal is the mirror of values another tile of the same diagonal block stores.
 */
KERNEL static inline __attribute__((always_inline)) void bf16_tile_body(const int tile_rows, int k,
                                                                        const float *restrict right,
                                                                        const float *restrict left, int m, int row0,
                                                                        int rows, int col0, int cols,
                                                                        uint16_t *restrict out,
                                                                        const bf16_epilogue *e) {
    float sums[TILE_MAX][PANEL] __attribute__((aligned(32)));
    tile_sums(tile_rows, k, right, left, NULL, 0, 0, 0, sums);
    uint16_t values[TILE_MAX][PANEL];
    for (int j = 0; j < tile_rows && j < rows; j++) {
        __m256 v0 = _mm256_load_ps(sums[j]);
        __m256 v1 = _mm256_load_ps(sums[j] + 8);
        int row = row0 + j;
        if (e->s != NULL) {
            const uint16_t *srow = e->s + (size_t) row * m + col0;
            __m256 c = _mm256_set1_ps(e->c);
            __m256 b = _mm256_set1_ps(e->b);
            v0 = _mm256_fmadd_ps(v0, c, _mm256_mul_ps(widen(srow, cols), b));
            v1 = _mm256_fmadd_ps(v1, c, _mm256_mul_ps(widen(srow + 8, cols - 8), b));
            v0 = add_in_lane(v0, row - col0, e->a);
            v1 = add_in_lane(v1, row - col0 - 8, e->a);
        }
        _mm_storeu_si128((__m128i *) values[j], narrow(v0));
        _mm_storeu_si128((__m128i *) (values[j] + 8), narrow(v1));
    }
    for (int j = 0; j < rows; j++) {
        int row = row0 + j;
        int first = row - col0 > 0 ? row - col0 : 0; /* columns col0 + first .. are on or above the diagonal */
        if (first >= cols) {
            continue;
        }
        memcpy(out + (size_t) row * m + col0 + first, values[j] + first, (size_t) (cols - first) * sizeof(uint16_t));
        for (int c = first; c < cols; c++) {
            out[(size_t) (col0 + c) * m + row] = values[j][c];
        }
    }
}

KERNEL static void bf16_tile6(int k, const float *right, const float *left, int m, int row0, int rows, int col0,
                              int cols, uint16_t *out, const bf16_epilogue *e) {
    bf16_tile_body(6, k, right, left, m, row0, rows, col0, cols, out, e);
}

KERNEL static void bf16_tile4(int k, const float *right, const float *left, int m, int row0, int rows, int col0,
                              int cols, uint16_t *out, const bf16_epilogue *e) {
    bf16_tile_body(4, k, right, left, m, row0, rows, col0, cols, out, e);
}

/* This thread's share [first, end) of the tiles on and above the diagonal: left panel p meets panels p .. last. */
static void bf16_upper_tiles(const float *packed, int m, int k, uint16_t *out, const bf16_epilogue *e, long first,
                             long end) {
    static const int start[MUON_TILES_PER_PANEL] = {0, 6, 12};
    static const int height[MUON_TILES_PER_PANEL] = {6, 6, 4};
    int panels = panels_of(m);
    size_t panel_floats = (size_t) PANEL * k;
    long index = 0;
    for (int lp = 0; lp < panels && index < end; lp++) {
        for (int t = 0; t < MUON_TILES_PER_PANEL; t++) {
            long tiles = panels - lp;
            int row0 = lp * PANEL + start[t];
            if (index + tiles <= first || row0 >= m) {
                index += tiles;
                continue;
            }
            int rows = min_int(m - row0, height[t]);
            const float *left = packed + lp * panel_floats + start[t];
            for (int rp = lp; rp < panels; rp++, index++) {
                if (index < first || index >= end) {
                    continue;
                }
                int col0 = rp * PANEL;
                const float *right = packed + rp * panel_floats;
                if (height[t] == 6) {
                    bf16_tile6(k, right, left, m, row0, rows, col0, min_int(m - col0, PANEL), out, e);
                } else {
                    bf16_tile4(k, right, left, m, row0, rows, col0, min_int(m - col0, PANEL), out, e);
                }
            }
        }
    }
}

void muon_bf16_avx2_self_product(const uint16_t *x, int m, int k, uint16_t *out, void *packed, int threads,
                                 const uint16_t *s, float a, float b, float c) {
    float *panels = aligned64(packed);
    int count = panels_of(m);
    long total = 0;
    for (int p = 0; p < count; p++) {
        total += (long) MUON_TILES_PER_PANEL * (count - p);
    }
    bf16_epilogue e = {s, a, b, c};
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        int n = omp_get_num_threads();
        for (int p = (int) ((long) count * t / n); p < (int) ((long) count * (t + 1) / n); p++) {
            pack_bf16_panel(x, m, k, p, panels + (size_t) p * PANEL * k);
        }
#pragma omp barrier
        bf16_upper_tiles(panels, m, k, out, &e, total * t / n, total * (t + 1) / n);
    }
}
