package dev.muon.cuda;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The symmetric kernels' tile walk, on the host: which tiles are computed and mirrored for a given m. */
class TriangleTilesTest {

    @ParameterizedTest(name = "m={0}")
    @ValueSource(longs = {1, 8, 127, 128, 129, 256, 1000, 1024, 2056, 4096, 8192, 12_288})
    void everyOutputTile_isWrittenExactlyOnce_andOnlyUpperTilesAreComputed(long m) {
        int t = TriangleTiles.tilesPerEdge(m);
        int blocks = TriangleTiles.blockCount(m);
        assertEquals((long) t * (t + 1) / 2, blocks, "blocks for m=" + m);
        int[][] writes = new int[t][t];
        int[][] computed = new int[t][t];
        for (int b = 0; b < blocks; b++) {
            int[] ij = TriangleTiles.tileOf(b);
            assertTrue(ij[0] <= ij[1], "block " + b + " computes lower tile " + ij[0] + "," + ij[1]);
            computed[ij[0]][ij[1]]++;
            for (int[] w : TriangleTiles.writes(b)) {
                writes[w[0]][w[1]]++;
            }
        }
        for (int i = 0; i < t; i++) {
            for (int j = 0; j < t; j++) {
                assertEquals(1, writes[i][j], "tile " + i + "," + j + " of m=" + m + " written " + writes[i][j] + " times");
                assertEquals(i <= j ? 1 : 0, computed[i][j], "tile " + i + "," + j + " computed");
            }
        }
    }

    @Test
    void work_isALittleOverHalfTheGemm() {
        // 4096 = 32 tiles per edge: 528 of 1024 tiles, 51.6% of a full product.
        assertEquals(528, TriangleTiles.blockCount(4096));
        assertEquals(32 * 33 / 2, TriangleTiles.blockCount(4096));
    }

    @Test
    void blocksAreNumberedColumnByColumn() {
        assertArrayEquals(new int[]{0, 0}, TriangleTiles.tileOf(0));
        assertArrayEquals(new int[]{0, 1}, TriangleTiles.tileOf(1));
        assertArrayEquals(new int[]{1, 1}, TriangleTiles.tileOf(2));
        assertArrayEquals(new int[]{0, 2}, TriangleTiles.tileOf(3));
        assertArrayEquals(new int[]{2, 2}, TriangleTiles.tileOf(5));
    }

    @Test
    void diagonalBlock_writesOneTile_offDiagonalBlock_writesTileAndMirror() {
        assertEquals(1, TriangleTiles.writes(2).length);
        assertArrayEquals(new int[][]{{0, 2}, {2, 0}}, TriangleTiles.writes(3));
    }

    @Test
    void floatRootCorrections_holdAtEveryColumnBoundary_upToTheLargestGrid() {
        // The float32 square root is off by one near large triangular numbers; the integer steps must fix it.
        for (long j = 0; j < TriangleTiles.MAX_TILES_PER_EDGE; j++) {
            int first = (int) (j * (j + 1) / 2);
            assertArrayEquals(new int[]{0, (int) j}, TriangleTiles.tileOf(first), "first block of column " + j);
            if (j > 0) {
                assertArrayEquals(new int[]{(int) j - 1, (int) j - 1}, TriangleTiles.tileOf(first - 1),
                        "last block of column " + (j - 1));
            }
        }
    }

    static Stream<Arguments> badInputs() {
        return Stream.of(
                Arguments.of("m zero", (Runnable) () -> TriangleTiles.tilesPerEdge(0), "m must be >= 1, got 0"),
                Arguments.of("m negative", (Runnable) () -> TriangleTiles.blockCount(-5), "m must be >= 1, got -5"),
                Arguments.of("m too large", (Runnable) () -> TriangleTiles.tilesPerEdge(TriangleTiles.MAX_M + 1),
                        "m must be <= " + TriangleTiles.MAX_M),
                Arguments.of("t negative", (Runnable) () -> TriangleTiles.tileOf(-1), "t must be >= 0, got -1"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badInputs")
    void badInput_isRejected(String name, Runnable call, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }
}
