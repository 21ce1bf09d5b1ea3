/*
 * What muon-core's kernel files share: the variant codes Java passes through JNI, the float32 products' pieces
 * that differ between instruction sets (a table of them per variant; the blocked driver in muon_f32_kernels.c is
 * common), the AVX2 bfloat16 half product (muon_avx2_kernels.c) that muon_cpu_kernels.c dispatches to, and the
 * AVX-512 bfloat16 panels that muon_bf16_step.c shares with muon_cpu_kernels.c.
 *
 * Every function is built without ISA flags on the command line: each one that uses AVX-512 or AVX2 carries its own
 * target attribute, and Java calls a variant's functions only after muon_variant_supported() said yes, so loading
 * the library on any x86-64 CPU is safe.
 */
#ifndef MUON_KERNELS_H
#define MUON_KERNELS_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* NativeKernels.Variant's codes. */
#define MUON_VARIANT_AVX512 0
#define MUON_VARIANT_AVX2 1

/* Whether this CPU and OS run the variant's instructions. */
int muon_variant_supported(int variant);

/* In-register transpose of 16 rows of 16 floats: r[c] becomes column c. Only moves bits, so it serves any 32-bit
 * values (the bfloat16 pack's pairs too). AVX-512: call it only where that variant runs. */
static inline __attribute__((always_inline, target("avx512f"))) void muon_transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + j], lane L: rows 4i .. 4i+3 of column 4L + j */
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
        t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
        r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD);
    }
}

/* Block b of a rows × cols matrix cut into side × side blocks, numbered row by row (the last row and column of
 * blocks cut short): its first row and column, and how many rows and columns it holds. */
typedef struct {
    long row0;
    long col0;
    int rows;
    int cols;
} muon_block;

static inline muon_block muon_block_at(long b, long rows, long cols, int side) {
    long per_row = (cols + side - 1) / side;
    muon_block k;
    k.row0 = b / per_row * side;
    k.col0 = b % per_row * side;
    k.rows = (int) (rows - k.row0 < side ? rows - k.row0 : side);
    k.cols = (int) (cols - k.col0 < side ? cols - k.col0 : side);
    return k;
}

/* A bfloat16's float32 value (exact). */
static inline __attribute__((always_inline)) float muon_bf16_value(uint16_t b) {
    uint32_t u = (uint32_t) b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* c10::BFloat16's rounding of a float32, which libtorch's casts use: to nearest, ties to even, subnormals kept;
 * NaN to a quiet NaN. (AVX512_BF16's vcvtneps2bf16 flushes subnormals, so it is not used for this.) */
static inline __attribute__((always_inline)) uint16_t muon_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        return 0x7FC0u;
    }
    return (uint16_t) ((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* Tiles per packed panel of the float32 products' left operand (rows tile_start[t] .. + tile_rows[t]). */
#define MUON_TILES_PER_PANEL 3

/* What a float32 tile does with its sums: continue out's (later blocks of the inner dimension: the tile starts from
 * them), and in the last block of a polynomial, out = c·sum + b·s + a on the diagonal. */
typedef struct {
    int accumulate;
    const float *s; /* the polynomial's s at the tile's origin (same leading dimension as out), or NULL */
    float a, b, c;
    int diagonal; /* row0 - col0 of the tile: the tile column in which its row 0 meets out's diagonal */
} muon_f32_epilogue;

/* The float32 products' pieces of one instruction set. */
typedef struct {
    /* Rows per packed panel, which is also the width (output columns) of a register tile. */
    int panel;
    int tile_start[MUON_TILES_PER_PANEL];
    int tile_rows[MUON_TILES_PER_PANEL];
    /* The deepest block of the inner dimension (a multiple of 16): the inner dimension runs in blocks of equal depth,
     * at most this; a value's bits do not depend on it (a tile continues out's sums). */
    int max_depth;
    /* out[j][i] (+)= Σ_q left[q·panel + j]·right[q·panel + i] for j < rows, i < cols, then e's epilogue;
     * tile_rows is one of tile_rows[]. */
    void (*tile)(int tile_rows, int depth, const float *right, const float *left, float *out, long ld, int rows,
                 int cols, const muon_f32_epilogue *e);
    /* packed[q·panel + r] = src[(row0 + r)·ld + q0 + q]: rows of src become a panel's columns (rows past rows:
     * zero); packed is 64-byte aligned. */
    void (*pack_rows)(const float *src, long ld, int row0, int rows, int q0, int depth, float *packed);
    /* out[i][j] = out[j][i] below the diagonal of the m × m out, this thread's share. */
    void (*mirror_upper)(float *out, int m, int thread, int threads);
    /* Σ g[i]² in double, in the order both variants share (so that they give the same bits). */
    double (*sum_of_squares)(const float *g, int n);
    /* out[i·n + j] = scale · g[j·m + i] for the blocks [first_block, end_block) of transpose_block² values. */
    void (*scale_transposed)(const float *g, int m, int n, float scale, float *out, int first_block, int end_block);
    int transpose_block;
    /* out[i] = g[i]·scale for first <= i < end. */
    void (*scale_plain)(const float *g, long first, long end, float scale, float *out);
} muon_f32_isa;

extern const muon_f32_isa muon_f32_avx512;
extern const muon_f32_isa muon_f32_avx2;

/* Rows per packed panel of the AVX-512 bfloat16 products (muon_cpu_kernels.c, muon_bf16_step.c): for each pair of
 * columns, the panel's rows' two values side by side. */
#define MUON_BF16_PANEL 32

/* Rows of out per register tile of those products: 8 × 32 float32 sums in 16 zmm registers. */
#define MUON_BF16_TILE_ROWS 8

/* The sums of one register tile of those products, the accumulate step both files' tiles share:
 * acc[r][h][i] = Σ_q left[q·2·PANEL + 2r .. 2r + 1] · right[q·2·PANEL + 2·(16h + i) .. + 1] over the pairs q of two
 * panels (left at the tile's first row's pair), float32 sums by vdpbf16ps in q's order. AVX-512: call it only where
 * that variant runs. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512bf16"))) void
muon_bf16_tile_sums(const uint16_t *left, const uint16_t *right, int pairs, __m512 acc[MUON_BF16_TILE_ROWS][2]) {
    for (int r = 0; r < MUON_BF16_TILE_ROWS; r++) {
        acc[r][0] = _mm512_setzero_ps();
        acc[r][1] = _mm512_setzero_ps();
    }
    for (int q = 0; q < pairs; q++) {
        __m512bh b0 = (__m512bh) _mm512_loadu_si512(right + (size_t) q * MUON_BF16_PANEL * 2);
        __m512bh b1 = (__m512bh) _mm512_loadu_si512(right + (size_t) q * MUON_BF16_PANEL * 2 + MUON_BF16_PANEL);
        const uint16_t *aq = left + (size_t) q * MUON_BF16_PANEL * 2;
#pragma GCC unroll 8
        for (int r = 0; r < MUON_BF16_TILE_ROWS; r++) {
            uint32_t pair;
            memcpy(&pair, aq + 2 * r, sizeof pair);
            __m512bh av = (__m512bh) _mm512_set1_epi32((int) pair);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
    }
}

/* Panels [first_panel, end_panel) of the row-major m × k bfloat16 x in that layout (rows past m and an odd k's last
 * column zero). AVX-512: call it only where that variant runs. */
void muon_bf16_pack_panels(const uint16_t *x, int m, int k, uint16_t *packed, int first_panel, int end_panel);

/* Bytes of scratch the AVX-512 bfloat16 symmetric step (muon_bf16_step.c) needs for an m × n X. */
size_t muon_bf16_step_bytes(int m, int n);

/* Bytes of packing scratch the AVX2 bfloat16 half product needs for an m × k operand. */
size_t muon_bf16_avx2_pack_bytes(int m, int k);

/*
 * out = x·xᵀ (s == NULL) or a·I + b·s + c·s·s (x == s, k == m) for the row-major m × k bfloat16 x, float32
 * accumulation over the whole of k, rounded once to bfloat16, both triangles written; packed has
 * muon_bf16_avx2_pack_bytes(m, k) bytes.
 */
void muon_bf16_avx2_self_product(const uint16_t *x, int m, int k, uint16_t *out, void *packed, int threads,
                                 const uint16_t *s, float a, float b, float c);

#endif
