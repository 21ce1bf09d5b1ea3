package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.ConvWeights;
import dev.muon.MuonConfig;
import dev.muon.StackedWeights;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * muon-core's layouts on DJL arrays: a 4-D conv filter under {@link ConvWeights#FLATTEN} moves as its
 * {@code [out, in·kh·kw]} matrix would, and a 3-D stack under {@link StackedWeights#BATCH} as its matrices would
 * one by one (float64, 1e-12).
 */
class LayoutTest {
    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.FLOAT64)
            .withConvWeights(ConvWeights.FLATTEN).withStackedWeights(StackedWeights.BATCH);

    /** Three steps of Muon on one parameter of {@code shape} from {@code start}, with the given gradients. */
    private static double[] run(NDManager manager, NDArray start, Shape shape, NDArray[] grads) {
        NDArray p = start.reshape(shape).duplicate();
        ParamBlock block = new ParamBlock().param("p", p);
        Muon muon = Muon.builder().optBlock(block).optConfig(CONFIG).build();
        String id = block.getParameters().get(0).getValue().getId();
        for (NDArray g : grads) {
            muon.update(id, p, g.reshape(shape));
        }
        return Measures.values(p);
    }

    @Test
    void aConvFilter_movesAsItsFlattenedMatrix() {
        try (NDManager manager = NDManager.newBaseManager()) {
            manager.getEngine().setRandomSeed(3);
            NDArray start = manager.randomNormal(new Shape(4, 18)).toType(DataType.FLOAT64, false);
            NDArray[] grads = new NDArray[3];
            for (int k = 0; k < grads.length; k++) {
                grads[k] = manager.randomNormal(new Shape(4, 18)).toType(DataType.FLOAT64, false);
            }
            double[] conv = run(manager, start, new Shape(4, 2, 3, 3), grads);
            double[] matrix = run(manager, start, new Shape(4, 18), grads);
            double error = Measures.relativeError(conv, matrix);
            assertTrue(error <= 1e-12, "rel error " + error);
        }
    }

    @Test
    void aStack_movesAsItsMatricesOneByOne() {
        try (NDManager manager = NDManager.newBaseManager()) {
            manager.getEngine().setRandomSeed(4);
            NDArray start = manager.randomNormal(new Shape(2, 6, 4)).toType(DataType.FLOAT64, false);
            NDArray[] grads = new NDArray[3];
            for (int k = 0; k < grads.length; k++) {
                grads[k] = manager.randomNormal(new Shape(2, 6, 4)).toType(DataType.FLOAT64, false);
            }
            double[] stacked = run(manager, start, new Shape(2, 6, 4), grads);
            for (int i = 0; i < 2; i++) {
                NDArray[] own = new NDArray[grads.length];
                for (int k = 0; k < grads.length; k++) {
                    own[k] = grads[k].get(i);
                }
                double[] single = run(manager, start.get(i), new Shape(6, 4), own);
                double[] slice = java.util.Arrays.copyOfRange(stacked, i * 24, (i + 1) * 24);
                double error = Measures.relativeError(slice, single);
                assertTrue(error <= 1e-12, "matrix " + i + ": rel error " + error);
            }
        }
    }
}
