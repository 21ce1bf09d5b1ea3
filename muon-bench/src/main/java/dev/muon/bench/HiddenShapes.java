package dev.muon.bench;

import java.util.ArrayList;
import java.util.List;

/** The hidden matrices of a stack of transformer blocks, as the out-of-process benchmarks build their Muon group. */
final class HiddenShapes {
    private HiddenShapes() {
    }

    /**
     * Each block's q, k, v and o projections (width × width) and its MLP's two matrices, as [out, in] weights.
     *
     * @param width  the model width
     * @param layers the blocks
     * @return the shapes, block by block
     */
    static List<long[]> of(int width, int layers) {
        List<long[]> shapes = new ArrayList<>();
        for (int layer = 0; layer < layers; layer++) {
            for (int i = 0; i < 4; i++) {
                shapes.add(new long[]{width, width});
            }
            shapes.add(new long[]{4L * width, width});
            shapes.add(new long[]{width, 4L * width});
        }
        return shapes;
    }
}
