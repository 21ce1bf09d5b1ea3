package dev.muon.cuda;

/**
 * The host-side twin of the symmetric kernels' tile walk ({@code tile_of} in {@code ns_symmetric.cu} and
 * {@code ns_symmetric_sm90.cu}), so that the triangle indexing can be checked without a device.
 *
 * <p>An {@code m × m} symmetric result is cut into {@code T × T} square tiles of {@link #TILE} rows,
 * {@code T = ceil(m / TILE)}. One thread block computes each tile {@code (i, j)} with {@code i <= j}; blocks are
 * numbered column by column, {@code t = j (j + 1) / 2 + i}. A block with {@code i < j} writes its tile and the
 * transposed copy at {@code (j, i)}; a block with {@code i == j} writes its diagonal tile only.
 */
final class TriangleTiles {
    /** The tile edge of both symmetric kernels, in rows. */
    static final int TILE = 128;
    /** The kernels compute {@code j (j + 1)} in 32-bit ints: {@code j} must stay well under 46341. */
    static final int MAX_TILES_PER_EDGE = 32_768;
    /** The largest Gram order the kernels accept. */
    static final long MAX_M = (long) MAX_TILES_PER_EDGE * TILE;

    private TriangleTiles() {
    }

    /**
     * Tiles along one edge of an {@code m × m} result.
     *
     * @param m the Gram matrix's order
     * @return {@code ceil(m / TILE)}
     */
    static int tilesPerEdge(long m) {
        if (m < 1) {
            throw new IllegalArgumentException("m must be >= 1, got " + m);
        }
        long t = (m + TILE - 1) / TILE;
        if (t > MAX_TILES_PER_EDGE) {
            throw new IllegalArgumentException("m must be <= " + MAX_M + ", got " + m);
        }
        return (int) t;
    }

    /**
     * Thread blocks one matrix needs: the tiles on and above the diagonal.
     *
     * @param m the Gram matrix's order
     * @return {@code T (T + 1) / 2}
     */
    static int blockCount(long m) {
        long t = tilesPerEdge(m);
        return (int) (t * (t + 1) / 2);
    }

    /**
     * The tile that block {@code t} computes, by the kernels' arithmetic: a float32 square root, then integer
     * corrections for its rounding.
     *
     * @param t the block index, {@code 0 <= t < blockCount(m)}
     * @return {@code {i, j}} with {@code i <= j}
     */
    static int[] tileOf(int t) {
        if (t < 0) {
            throw new IllegalArgumentException("t must be >= 0, got " + t);
        }
        // (sqrtf(8.0f * (float) t + 1.0f) - 1.0f) * 0.5f, truncated, as in the CUDA source.
        float root = (float) Math.sqrt(8.0f * (float) t + 1.0f);
        int j = (int) ((root - 1.0f) * 0.5f);
        while (triangular(j) > t) {
            --j;
        }
        while (triangular(j + 1) <= t) {
            ++j;
        }
        return new int[]{t - (int) triangular(j), j};
    }

    /**
     * The output tiles that block {@code t} writes.
     *
     * @param t the block index
     * @return {@code {{i, j}}} for a diagonal tile, {@code {{i, j}, {j, i}}} otherwise
     */
    static int[][] writes(int t) {
        int[] ij = tileOf(t);
        return ij[0] == ij[1] ? new int[][]{ij} : new int[][]{ij, {ij[1], ij[0]}};
    }

    private static long triangular(long j) {
        return j * (j + 1) / 2;
    }
}
