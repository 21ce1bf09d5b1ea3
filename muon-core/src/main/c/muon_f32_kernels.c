/*
 * muon-core's float32 Newton–Schulz products in C, called through JNI from dev.muon.orthogonalize.NativeKernels.
 *
 * Three products and the normalisation before them, all on row-major float32 matrices, float32 accumulation:
 *   self product   out = x·xᵀ for an m × k x: the upper triangle only (about half the multiply-adds of a GEMM),
 *                  mirrored, so the result is exactly symmetric;
 *   polynomial     out = a·I + b·s + c·s·s for a symmetric m × m s: the self product of s with the sum formed
 *                  in the same pass;
 *   times          out = l·r for an m × m l (symmetric or not) and an m × n r; for commuting l and r (the Gram
 *                  iteration's polynomials of one matrix), the upper triangle only, mirrored;
 *   normalize      out = g / max(safety·‖g‖_F, eps), the iteration's first pass, for the same reason: one pool.
 *
 * Why our own, when OpenBLAS has ?syrk and ?symm: OpenBLAS's ?syrk runs at about 0.65 of its ?gemm's time for half
 * the multiply-adds, and its thread pool alternates with libtorch's OpenMP pool inside a Newton–Schulz step. These
 * run the half product at about 0.55 of ?gemm's time, the full products at ?gemm's rate, all on libgomp's OpenMP
 * pool (libtorch's own once libtorch is loaded). Measured in docs/benchmarks.md.
 *
 * The design is a GEMM's: the inner dimension in blocks of at most MAX_DEPTH columns; for each block, both operands
 * packed into panels of PANEL rows (for each column q of the block, the panel's PANEL values side by side, 64-byte
 * aligned); a register tile of up to 12 output rows × 32 output columns starts from out's sums of the blocks before
 * (zero in the first), accumulates over the block in 24 zmm registers (two 16-float loads and 12 broadcasts per
 * column for 24 fused multiply-adds) and is stored into out. A panel of
 * the left operand splits into tiles of 12, 12 and 8 rows, which read their broadcasts straight from the panel, so
 * the left operand needs no pack of its own where it is the right one (the self product).
 *
 * The tile holds out's rows J.. and columns I..: row j of the tile is Σ_q left[q][j]·right[q][i], which for the
 * self product is out[J + j][I + i] with both operands x's transposed panels; so the self product fills the tiles
 * on and above the diagonal and copies the upper triangle down at the end.
 *
 * Each output value is one chain of FMAs over the inner dimension, in order, whatever the thread count (a tile's
 * block belongs to one thread, blocks follow each other) and the blocks' depth, so the result's bits depend on
 * neither.
 *
 * Two variants of the pieces that depend on the instruction set (the tile, the packing transposes, the mirror and
 * the normalisation's vector loops): the AVX-512 ones below and the AVX2 ones in muon_avx2_kernels.c (6 × 16 tiles
 * over 16-row panels; why there), each a table the driver runs; Java passes the variant with every call. Only the
 * functions marked KERNEL use AVX-512; Java calls them only after NativeKernels' probe said this CPU runs them.
 */
#include <jni.h>
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include "muon_kernels.h"

#define KERNEL __attribute__((target("avx512f")))

/* The AVX-512 pieces' rows per packed panel, and the width (output columns) of their register tile. */
#define PANEL 32
/*
 * The deepest block of the inner dimension. Each block costs the threads two barriers and the tiles a pass over
 * out, and with OMP_WAIT_POLICY=PASSIVE (what the step runs best with) a barrier is a futex wake: at 768² on two
 * threads, blocks of 768 (one) instead of 256 (three) made the half products 3–6% faster and the full one 2–3%,
 * while one thread ran the same at both depths (docs/benchmarks.md). A left tile's 12 × 768 floats no longer fit
 * L1 beside the streamed right panel; its broadcasts come from L2, 48 bytes per 24 FMAs.
 */
#define MAX_DEPTH 768

#define TILES_PER_PANEL MUON_TILES_PER_PANEL

static inline int panels_of(const muon_f32_isa *isa, int rows) {
    return (rows + isa->panel - 1) / isa->panel;
}

static inline int min_int(int a, int b) {
    return a < b ? a : b;
}

static inline int round_up16(int n) {
    return (n + 15) / 16 * 16;
}

/* The depth of the blocks of an inner dimension: the fewest blocks of at most max_depth, of equal depth rounded up
 * to 16 (the last one shorter). */
static int block_depth(const muon_f32_isa *isa, int inner) {
    int blocks = (inner + isa->max_depth - 1) / isa->max_depth;
    return blocks <= 1 ? inner : round_up16((inner + blocks - 1) / blocks);
}

/* The packing scratch one call needs, in floats: the right operand's panels (at most max(m, n) rows) and the left
 * operand's (m rows), each one block deep (the inner dimension is m or n, so a block is at most max(m, n) deep). */
static size_t pack_floats(const muon_f32_isa *isa, int m, int n) {
    int widest = m > n ? m : n;
    int depth = min_int(isa->max_depth, round_up16(widest));
    return ((size_t) panels_of(isa, widest) + (size_t) panels_of(isa, m)) * isa->panel * depth;
}

static float *aligned(jlong address) {
    return (float *) (((uintptr_t) address + 63) & ~(uintptr_t) 63);
}

/* packed[q·PANEL + r] = src[(row0 + r)·ld + q0 + q]: rows of src become a panel's columns (rows past m: zero). */
KERNEL static void pack_rows(const float *src, long ld, int row0, int rows, int q0, int depth, float *packed) {
    for (int half = 0; half < 2; half++) {
        for (int qb = 0; qb < depth; qb += 16) {
            int width = min_int(depth - qb, 16);
            __mmask16 mask = (__mmask16) ((1u << width) - 1);
            __m512 r[16];
            for (int i = 0; i < 16; i++) {
                int row = half * 16 + i;
                r[i] = row < rows ? _mm512_maskz_loadu_ps(mask, src + (long) (row0 + row) * ld + q0 + qb)
                                  : _mm512_setzero_ps();
            }
            muon_transpose16(r);
            for (int c = 0; c < width; c++) {
                _mm512_store_ps(packed + (long) (qb + c) * PANEL + half * 16, r[c]);
            }
        }
    }
}

/* packed[q·panel + c] = src[(q0 + q)·ld + col0 + c]: a block of src's columns as they lie (columns past n: zero). */
static void pack_columns(int panel, const float *src, long ld, int col0, int cols, int q0, int depth, float *packed) {
    for (int q = 0; q < depth; q++) {
        float *to = packed + (long) q * panel;
        memcpy(to, src + (long) (q0 + q) * ld + col0, (size_t) cols * sizeof(float));
        if (cols < panel) {
            memset(to + cols, 0, (size_t) (panel - cols) * sizeof(float));
        }
    }
}

typedef muon_f32_epilogue epilogue;

/* The register tile: out[j][i] (+)= Σ_q left[q·PANEL + j]·right[q·PANEL + i] for j < rows, i < cols. */
KERNEL static inline __attribute__((always_inline)) void tile_body(const int tile_rows, int depth, const float *restrict right,
                                                            const float *restrict left, float *restrict out,
                                                            long ld, int rows, int cols, const epilogue *e) {
    __mmask16 mask_lo = cols >= 16 ? 0xFFFF : (__mmask16) ((1u << cols) - 1);
    __mmask16 mask_hi = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16) ((1u << (cols - 16)) - 1);
    /* A later block of the inner dimension continues out's sums in the accumulators, so each value is one chain of
     * FMAs over the whole inner dimension, and its bits do not depend on where the blocks end. */
    __m512 lo[12], hi[12];
#pragma GCC unroll 12
    for (int j = 0; j < tile_rows; j++) {
        int from_out = e->accumulate && j < rows;
        lo[j] = from_out ? _mm512_maskz_loadu_ps(mask_lo, out + (long) j * ld) : _mm512_setzero_ps();
        hi[j] = from_out ? _mm512_maskz_loadu_ps(mask_hi, out + (long) j * ld + 16) : _mm512_setzero_ps();
    }
    for (int q = 0; q < depth; q++) {
        __m512 r0 = _mm512_load_ps(right);
        __m512 r1 = _mm512_load_ps(right + 16);
#pragma GCC unroll 12
        for (int j = 0; j < tile_rows; j++) {
            __m512 l = _mm512_set1_ps(left[j]);
            lo[j] = _mm512_fmadd_ps(r0, l, lo[j]);
            hi[j] = _mm512_fmadd_ps(r1, l, hi[j]);
        }
        right += PANEL;
        left += PANEL;
    }
    for (int j = 0; j < tile_rows && j < rows; j++) {
        float *row = out + (long) j * ld;
        __m512 v0 = lo[j];
        __m512 v1 = hi[j];
        if (e->s != NULL) {
            const float *s = e->s + (long) j * ld;
            __m512 b = _mm512_set1_ps(e->b);
            __m512 c = _mm512_set1_ps(e->c);
            v0 = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mask_lo, s), _mm512_mul_ps(c, v0));
            v1 = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mask_hi, s + 16), _mm512_mul_ps(c, v1));
        }
        _mm512_mask_storeu_ps(row, mask_lo, v0);
        _mm512_mask_storeu_ps(row + 16, mask_hi, v1);
        if (e->s != NULL) {
            int i = e->diagonal + j;
            if (i >= 0 && i < cols) {
                row[i] += e->a;
            }
        }
    }
}

KERNEL static void tile12(int depth, const float *right, const float *left, float *out, long ld, int rows, int cols,
                          const epilogue *e) {
    tile_body(12, depth, right, left, out, ld, rows, cols, e);
}

KERNEL static void tile8(int depth, const float *right, const float *left, float *out, long ld, int rows, int cols,
                         const epilogue *e) {
    tile_body(8, depth, right, left, out, ld, rows, cols, e);
}

static void avx512_tile(int tile_rows, int depth, const float *right, const float *left, float *out, long ld,
                        int rows, int cols, const epilogue *e) {
    if (tile_rows == 12) {
        tile12(depth, right, left, out, ld, rows, cols, e);
    } else {
        tile8(depth, right, left, out, ld, rows, cols, e);
    }
}

/* Tile t (0, 1, 2) of a left panel against a right panel. */
static inline void tile(const muon_f32_isa *isa, int t, int depth, const float *right_panel, const float *left_panel,
                        float *out, long ld, int rows, int cols, const epilogue *e) {
    isa->tile(isa->tile_rows[t], depth, right_panel, left_panel + isa->tile_start[t], out, ld, rows, cols, e);
}

/*
 * out[i][j] = out[j][i] below the diagonal: 16 × 16 blocks of the upper triangle transposed in registers and stored
 * below it, block rows dealt round-robin to the threads (a scalar copy took about 1 % of a 768² step).
 */
KERNEL static void mirror_upper(float *out, int m, int thread, int threads) {
    int blocks = (m + 15) / 16;
    for (int bi = thread; bi < blocks; bi += threads) {
        int i0 = bi * 16;
        int rows = min_int(16, m - i0);
        __mmask16 mask = (__mmask16) ((1u << rows) - 1);
        for (int bj = 0; bj < bi; bj++) {
            int j0 = bj * 16;
            __m512 r[16];
            for (int t = 0; t < 16; t++) {
                r[t] = _mm512_maskz_loadu_ps(mask, out + (long) (j0 + t) * m + i0);
            }
            muon_transpose16(r);
            for (int c = 0; c < rows; c++) {
                _mm512_storeu_ps(out + (long) (i0 + c) * m + j0, r[c]);
            }
        }
        for (int i = i0; i < i0 + rows; i++) {
            for (int j = i0; j < i; j++) {
                out[(long) i * m + j] = out[(long) j * m + i];
            }
        }
    }
}

/* Σ g[i]² of n floats, in double, in a fixed order (eight lanes, then the lanes summed, then the tail). */
KERNEL static double sum_of_squares(const float *g, int n) {
    __m512d acc = _mm512_setzero_pd();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(g + i));
        acc = _mm512_fmadd_pd(v, v, acc);
    }
    double sum = _mm512_reduce_add_pd(acc);
    for (; i < n; i++) {
        sum += (double) g[i] * g[i];
    }
    return sum;
}

/* out[i·n + j] = scale · g[j·m + i]: the m × n out from the n × m g, 16 × 16 blocks transposed in registers. */
KERNEL static void scale_transposed(const float *g, int m, int n, float scale, float *out, int first_block,
                                    int end_block) {
    __m512 s = _mm512_set1_ps(scale);
    for (int b = first_block; b < end_block; b++) {
        muon_block k = muon_block_at(b, n, m, 16);
        int j0 = (int) k.row0;
        int i0 = (int) k.col0;
        int rows = k.rows;
        int cols = k.cols;
        __mmask16 col_mask = (__mmask16) ((1u << cols) - 1);
        __mmask16 row_mask = (__mmask16) ((1u << rows) - 1);
        __m512 r[16];
        for (int t = 0; t < 16; t++) {
            r[t] = t < rows ? _mm512_maskz_loadu_ps(col_mask, g + (long) (j0 + t) * m + i0) : _mm512_setzero_ps();
        }
        muon_transpose16(r);
        for (int c = 0; c < cols; c++) {
            _mm512_mask_storeu_ps(out + (long) (i0 + c) * n + j0, row_mask, _mm512_mul_ps(r[c], s));
        }
    }
}

KERNEL static void scale_plain(const float *g, long first, long end, float scale, float *out) {
    __m512 s = _mm512_set1_ps(scale);
    long i = first;
    for (; i + 16 <= end; i += 16) {
        _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(g + i), s));
    }
    for (; i < end; i++) {
        out[i] = g[i] * scale;
    }
}

const muon_f32_isa muon_f32_avx512 = {
    PANEL, {0, 12, 24}, {12, 12, 8}, MAX_DEPTH, avx512_tile, pack_rows, mirror_upper, sum_of_squares,
    scale_transposed, 16, scale_plain,
};

/* The panels of one operand for one block of the inner dimension: x's rows transposed, or (copy) x's columns. */
static void pack_block(const muon_f32_isa *isa, const float *x, long ld, int rows_total, int transpose, int q0,
                       int depth, int first_panel, int end_panel, float *packed) {
    int panel = isa->panel;
    for (int p = first_panel; p < end_panel; p++) {
        int rows = min_int(rows_total - p * panel, panel);
        float *to = packed + (long) p * panel * depth;
        if (transpose) {
            isa->pack_rows(x, ld, p * panel, rows, q0, depth, to);
        } else {
            pack_columns(panel, x, ld, p * panel, rows, q0, depth, to);
        }
    }
}

/* What the threads pack for each block of the inner dimension, each its share of the panels. */
typedef struct {
    const float *right; /* the operand packed into the right panels */
    long right_ld;
    int right_rows;     /* its rows (transpose) or columns (copy) that become panel rows */
    int right_transpose;
    const float *left;  /* the left operand, or NULL where the left panels are the right ones */
    long left_ld;
    int left_rows;
    int left_transpose;
    int inner;          /* the inner dimension */
} blocked_operands;

static void pack_share(const muon_f32_isa *isa, const blocked_operands *ops, int q0, int depth, int thread,
                       int threads, float *buffer) {
    int right_panels = panels_of(isa, ops->right_rows);
    pack_block(isa, ops->right, ops->right_ld, ops->right_rows, ops->right_transpose, q0, depth,
               (int) ((long) right_panels * thread / threads), (int) ((long) right_panels * (thread + 1) / threads),
               buffer);
    if (ops->left != NULL) {
        int left_panels = panels_of(isa, ops->left_rows);
        pack_block(isa, ops->left, ops->left_ld, ops->left_rows, ops->left_transpose, q0, depth,
                   (int) ((long) left_panels * thread / threads), (int) ((long) left_panels * (thread + 1) / threads),
                   buffer + (size_t) right_panels * isa->panel * depth);
    }
}

/* Tiles on and above the diagonal of an m × m out: left panel p meets right panels p .. panels - 1. */
static long upper_tile_count(const muon_f32_isa *isa, int m) {
    int panels = panels_of(isa, m);
    long total = 0;
    for (int p = 0; p < panels; p++) {
        total += (long) TILES_PER_PANEL * (panels - p);
    }
    return total;
}

/*
 * This thread's share [first, end) of the tiles on and above the diagonal of the m × m out, for one block of the
 * inner dimension: right and left panels packed, out (+)= their products. poly (NULL for none) is applied in the
 * last block.
 */
static void upper_tiles(const muon_f32_isa *isa, const float *right_packed, const float *left_packed, int m,
                        int depth, float *out, int accumulate, const epilogue *poly, long first, long end) {
    int panel = isa->panel;
    int panels = panels_of(isa, m);
    long index = 0;
    for (int lp = 0; lp < panels && index < end; lp++) {
        for (int t = 0; t < TILES_PER_PANEL; t++) {
            long tiles = panels - lp;
            int row0 = lp * panel + isa->tile_start[t];
            if (index + tiles <= first || row0 >= m) {
                index += tiles;
                continue;
            }
            int rows = min_int(m - row0, isa->tile_rows[t]);
            for (int rp = lp; rp < panels; rp++, index++) {
                if (index < first || index >= end) {
                    continue;
                }
                int col0 = rp * panel;
                epilogue e = {accumulate, NULL, 0.0f, 0.0f, 0.0f, row0 - col0};
                if (poly != NULL) {
                    e.s = poly->s + (long) row0 * m + col0;
                    e.a = poly->a;
                    e.b = poly->b;
                    e.c = poly->c;
                }
                tile(isa, t, depth, right_packed + (long) rp * panel * depth, left_packed + (long) lp * panel * depth,
                     out + (long) row0 * m + col0, m, rows, min_int(m - col0, panel), &e);
            }
        }
    }
}

/* The tiles of one block of the inner dimension [q0, q0 + depth), this thread's share [first, end) of them. */
typedef void (*block_tiles)(const void *job, const float *packed, int q0, int depth, long first, long end);

/*
 * The blocked product on threads OpenMP threads: for each block of the inner dimension, every thread packs its
 * share of the panels, then forms its share of the total tiles; mirror_m > 0 mirrors the m × m mirror_out's upper
 * triangle at the end.
 */
static void run_blocked(const muon_f32_isa *isa, const blocked_operands *ops, long total, int threads,
                        float *packed, block_tiles tiles, const void *job, float *mirror_out, int mirror_m) {
    int block = block_depth(isa, ops->inner);
#pragma omp parallel num_threads(threads)
    {
        int thread = omp_get_thread_num();
        int count = omp_get_num_threads();
        long first = total * thread / count;
        long end = total * (thread + 1) / count;
        for (int q0 = 0; q0 < ops->inner; q0 += block) {
            int depth = min_int(ops->inner - q0, block);
            pack_share(isa, ops, q0, depth, thread, count, packed);
#pragma omp barrier
            tiles(job, packed, q0, depth, first, end);
            /* The next block repacks what other threads may still read. (Packing it into a second buffer while
             * the tiles run, one barrier per block instead of two, measured no faster.) */
#pragma omp barrier
        }
        if (mirror_m > 0) {
            isa->mirror_upper(mirror_out, mirror_m, thread, count);
        }
    }
}

typedef struct {
    const muon_f32_isa *isa;
    int m;
    int k;
    float *out;
    const epilogue *poly;
} self_product_job;

static void self_product_tiles(const void *job, const float *packed, int q0, int depth, long first, long end) {
    const self_product_job *j = job;
    int last = q0 + depth >= j->k;
    upper_tiles(j->isa, packed, packed, j->m, depth, j->out, q0 > 0, last ? j->poly : NULL, first, end);
}

/*
 * out = x·xᵀ (poly == NULL) or a·I + b·s + c·x·xᵀ with s = x (poly != NULL) for the m × k x; symmetric_x: x is
 * symmetric (m == k), so its transposed panels are plain copies.
 */
static void self_product(const muon_f32_isa *isa, const float *x, int m, int k, int symmetric_x, float *out,
                         float *packed, int threads, const epilogue *poly) {
    blocked_operands ops = {x, k, m, !symmetric_x, NULL, 0, 0, 0, k};
    self_product_job job = {isa, m, k, out, poly};
    run_blocked(isa, &ops, upper_tile_count(isa, m), threads, packed, self_product_tiles, &job, out, m);
}

typedef struct {
    const muon_f32_isa *isa;
    int m;
    int n;
    float *out;
    int symmetric_out;
} times_job;

static void times_tiles(const void *job, const float *packed, int q0, int depth, long first, long end) {
    const times_job *j = job;
    const muon_f32_isa *isa = j->isa;
    int panel = isa->panel;
    int right_panels = panels_of(isa, j->n);
    const float *left_packed = packed + (size_t) right_panels * panel * depth;
    if (j->symmetric_out) {
        upper_tiles(isa, packed, left_packed, j->m, depth, j->out, q0 > 0, NULL, first, end);
        return;
    }
    epilogue e = {q0 > 0, NULL, 0.0f, 0.0f, 0.0f, 0};
    /* Consecutive tiles share a left tile (in L1) and stream the right panels. */
    for (long index = first; index < end; index++) {
        long left_tile = index / right_panels;
        int rp = (int) (index % right_panels);
        int lp = (int) (left_tile / TILES_PER_PANEL);
        int t = (int) (left_tile % TILES_PER_PANEL);
        int row0 = lp * panel + isa->tile_start[t];
        if (row0 >= j->m) {
            continue;
        }
        int col0 = rp * panel;
        tile(isa, t, depth, packed + (long) rp * panel * depth, left_packed + (long) lp * panel * depth,
             j->out + (long) row0 * j->n + col0, j->n, min_int(j->m - row0, isa->tile_rows[t]),
             min_int(j->n - col0, panel), &e);
    }
}

/*
 * out = l·r for the m × m l and the m × n r; symmetric_l: l's transposed panels are plain copies. symmetric_out
 * (n == m): the product is symmetric in exact arithmetic (l and r commute), so only the tiles on and above the
 * diagonal are formed and then mirrored, as in the self product: half the multiply-adds.
 */
static void times(const muon_f32_isa *isa, const float *l, int symmetric_l, const float *r, int m, int n, float *out,
                  float *packed, int threads, int symmetric_out) {
    long total = symmetric_out ? upper_tile_count(isa, m)
                               : (long) TILES_PER_PANEL * panels_of(isa, m) * panels_of(isa, n);
    blocked_operands ops = {r, n, n, 0, l, m, m, !symmetric_l, m};
    times_job job = {isa, m, n, out, symmetric_out};
    run_blocked(isa, &ops, total, threads, packed, times_tiles, &job, out, symmetric_out ? m : 0);
}

/*
 * out = g / max(safety·‖g‖_F, eps) for the wide m × n out; g is m × n, or (transposed) the transpose of the
 * contiguous n × m g. As OpenBLAS's path computes it (snrm2, then a multiplication by the reciprocal): the norm is
 * summed in double and rounded to float32, the reciprocal taken in double and rounded to float32. Each source row
 * is summed on its own and the rows in order, so the bits do not depend on the thread count. row_sums holds one
 * double per source row.
 */
static void normalize(const muon_f32_isa *isa, const float *g, int m, int n, int transposed, float *out,
                      double safety, double eps, int threads, double *row_sums) {
    int source_rows = transposed ? n : m;
    int source_cols = transposed ? m : n;
    long count = (long) m * n;
    float scale = 0.0f;
#pragma omp parallel num_threads(threads)
    {
        int thread = omp_get_thread_num();
        int parts = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int r = 0; r < source_rows; r++) {
            row_sums[r] = isa->sum_of_squares(g + (long) r * source_cols, source_cols);
        }
#pragma omp single
        {
            double sum = 0.0;
            for (int r = 0; r < source_rows; r++) {
                sum += row_sums[r];
            }
            float norm = (float) sqrt(sum);
            double denominator = safety * (double) norm;
            scale = (float) (1.0 / (denominator > eps ? denominator : eps));
        }
        if (transposed) {
            int side = isa->transpose_block;
            long blocks = (long) ((n + side - 1) / side) * ((m + side - 1) / side);
            isa->scale_transposed(g, m, n, scale, out, (int) (blocks * thread / parts),
                                  (int) (blocks * (thread + 1) / parts));
        } else {
            isa->scale_plain(g, count * thread / parts, count * (thread + 1) / parts, scale, out);
        }
    }
}

static const muon_f32_isa *isa_of(jint variant) {
    return variant == MUON_VARIANT_AVX2 ? &muon_f32_avx2 : &muon_f32_avx512;
}

/*
 * The float32 entry points, one helper each, shared by the two JNI families: dev.muon.orthogonalize.NativeKernels
 * passes libtorch tensors' addresses (jlong), dev.muon.orthogonalize.BufferKernels direct ByteBuffers, whose
 * addresses GetDirectBufferAddress gives. Either way the caller checked shapes, dtypes, contiguity, capacities and
 * CPU support; packed has f32_pack_bytes(variant, ...) bytes, aligned here to 64.
 */

/* Bytes of packing scratch that one call needs for an m × k self product or an m × m by m × n product. */
static jlong f32_pack_bytes(jint variant, jint m, jint n) {
    return (jlong) (pack_floats(isa_of(variant), m, n) * sizeof(float) + 64);
}

/* out = x·xᵀ for the contiguous m × k x (symmetric_x: x is symmetric, m == k); out is m × m, not overlapping x,
 * exactly symmetric. */
static void f32_self_product(jint variant, const float *x, jint m, jint k, jboolean symmetric_x, float *out,
                             void *packed, jint threads) {
    self_product(isa_of(variant), x, m, k, symmetric_x == JNI_TRUE, out, aligned((jlong) (intptr_t) packed), threads,
                 NULL);
}

/* out = a·I + b·s + c·s·s for the exactly symmetric m × m s; s and out contiguous, not overlapping. The result is
 * exactly symmetric. */
static void f32_polynomial(jint variant, const float *s, jint m, float *out, void *packed, jint threads, jfloat a,
                           jfloat b, jfloat c) {
    epilogue poly = {0, s, a, b, c, 0};
    self_product(isa_of(variant), s, m, m, 1, out, aligned((jlong) (intptr_t) packed), threads, &poly);
}

/* out = l·r for the m × m l (left_symmetric: exactly symmetric) and the m × n r, all contiguous, out overlapping
 * neither; symmetric_out (n == m): l and r commute, and out is formed from its upper triangle, exactly symmetric. */
static void f32_times(jint variant, const float *l, jboolean left_symmetric, const float *r, jint m, jint n,
                      jboolean symmetric_out, float *out, void *packed, jint threads) {
    times(isa_of(variant), l, left_symmetric == JNI_TRUE, r, m, n, out, aligned((jlong) (intptr_t) packed), threads,
          symmetric_out == JNI_TRUE);
}

/* out = g / max(safety·‖g‖_F, eps) for the m × n out; g is m × n, or (transposed) the transpose of a contiguous
 * n × m matrix; out overlaps nothing. */
static void f32_normalize(jint variant, const float *g, jint m, jint n, jboolean transposed, float *out,
                          void *packed, jint threads, jdouble safety, jdouble eps) {
    normalize(isa_of(variant), g, m, n, transposed == JNI_TRUE, out, safety, eps, threads,
              (double *) aligned((jlong) (intptr_t) packed));
}

/* The family on addresses: dev.muon.orthogonalize.NativeKernels. */

JNIEXPORT jlong JNICALL Java_dev_muon_orthogonalize_NativeKernels_float32PackBytes(JNIEnv *env, jclass cls,
                                                                                    jint variant, jint m, jint n) {
    (void) env;
    (void) cls;
    return f32_pack_bytes(variant, m, n);
}

JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_float32SelfProduct(
        JNIEnv *env, jclass cls, jint variant, jlong x, jint m, jint k, jboolean symmetricX, jlong out, jlong packed,
        jint threads) {
    (void) env;
    (void) cls;
    f32_self_product(variant, (const float *) (intptr_t) x, m, k, symmetricX, (float *) (intptr_t) out,
                     (void *) (intptr_t) packed, threads);
}

JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_float32Polynomial(
        JNIEnv *env, jclass cls, jint variant, jlong s, jint m, jlong out, jlong packed, jint threads, jfloat a,
        jfloat b, jfloat c) {
    (void) env;
    (void) cls;
    f32_polynomial(variant, (const float *) (intptr_t) s, m, (float *) (intptr_t) out, (void *) (intptr_t) packed,
                   threads, a, b, c);
}

JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_float32Times(
        JNIEnv *env, jclass cls, jint variant, jlong l, jboolean leftSymmetric, jlong r, jint m, jint n,
        jboolean symmetricOut, jlong out, jlong packed, jint threads) {
    (void) env;
    (void) cls;
    f32_times(variant, (const float *) (intptr_t) l, leftSymmetric, (const float *) (intptr_t) r, m, n, symmetricOut,
              (float *) (intptr_t) out, (void *) (intptr_t) packed, threads);
}

JNIEXPORT void JNICALL Java_dev_muon_orthogonalize_NativeKernels_float32Normalize(
        JNIEnv *env, jclass cls, jint variant, jlong g, jint m, jint n, jboolean transposed, jlong out, jlong packed,
        jint threads, jdouble safety, jdouble eps) {
    (void) env;
    (void) cls;
    f32_normalize(variant, (const float *) (intptr_t) g, m, n, transposed, (float *) (intptr_t) out,
                  (void *) (intptr_t) packed, threads, safety, eps);
}

/*
 * The family on direct ByteBuffers: dev.muon.orthogonalize.BufferKernels, which a JVM without JavaCPP (muon-djl, on
 * DJL's libtorch) calls. A buffer without an address (not direct) leaves the call a no-op that returns false.
 */
static int buffer_addresses(JNIEnv *env, jobject a, jobject b, jobject c, void **pa, void **pb, void **pc) {
    *pa = (*env)->GetDirectBufferAddress(env, a);
    *pb = (*env)->GetDirectBufferAddress(env, b);
    *pc = c == NULL ? NULL : (*env)->GetDirectBufferAddress(env, c);
    return *pa != NULL && *pb != NULL && (c == NULL || *pc != NULL);
}

JNIEXPORT jlong JNICALL Java_dev_muon_orthogonalize_BufferKernels_float32PackBytes(JNIEnv *env, jclass cls,
                                                                                   jint variant, jint m, jint n) {
    (void) env;
    (void) cls;
    return f32_pack_bytes(variant, m, n);
}

JNIEXPORT jboolean JNICALL Java_dev_muon_orthogonalize_BufferKernels_float32SelfProduct(
        JNIEnv *env, jclass cls, jint variant, jobject x, jint m, jint k, jboolean symmetricX, jobject out,
        jobject packed, jint threads) {
    (void) cls;
    void *px, *pout, *ppacked;
    if (!buffer_addresses(env, x, out, packed, &px, &pout, &ppacked)) {
        return JNI_FALSE;
    }
    f32_self_product(variant, (const float *) px, m, k, symmetricX, (float *) pout, ppacked, threads);
    return JNI_TRUE;
}

JNIEXPORT jboolean JNICALL Java_dev_muon_orthogonalize_BufferKernels_float32Polynomial(
        JNIEnv *env, jclass cls, jint variant, jobject s, jint m, jobject out, jobject packed, jint threads, jfloat a,
        jfloat b, jfloat c) {
    (void) cls;
    void *ps, *pout, *ppacked;
    if (!buffer_addresses(env, s, out, packed, &ps, &pout, &ppacked)) {
        return JNI_FALSE;
    }
    f32_polynomial(variant, (const float *) ps, m, (float *) pout, ppacked, threads, a, b, c);
    return JNI_TRUE;
}

JNIEXPORT jboolean JNICALL Java_dev_muon_orthogonalize_BufferKernels_float32Times(
        JNIEnv *env, jclass cls, jint variant, jobject l, jboolean leftSymmetric, jobject r, jint m, jint n,
        jboolean symmetricOut, jobject out, jobject packed, jint threads) {
    (void) cls;
    void *pl, *pr, *pout;
    void *ppacked = (*env)->GetDirectBufferAddress(env, packed);
    if (!buffer_addresses(env, l, r, out, &pl, &pr, &pout) || ppacked == NULL) {
        return JNI_FALSE;
    }
    f32_times(variant, (const float *) pl, leftSymmetric, (const float *) pr, m, n, symmetricOut, (float *) pout,
              ppacked, threads);
    return JNI_TRUE;
}

JNIEXPORT jboolean JNICALL Java_dev_muon_orthogonalize_BufferKernels_float32Normalize(
        JNIEnv *env, jclass cls, jint variant, jobject g, jint m, jint n, jboolean transposed, jobject out,
        jobject packed, jint threads, jdouble safety, jdouble eps) {
    (void) cls;
    void *pg, *pout, *ppacked;
    if (!buffer_addresses(env, g, out, packed, &pg, &pout, &ppacked)) {
        return JNI_FALSE;
    }
    f32_normalize(variant, (const float *) pg, m, n, transposed, (float *) pout, ppacked, threads, safety, eps);
    return JNI_TRUE;
}
