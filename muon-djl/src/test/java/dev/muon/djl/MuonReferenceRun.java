package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.MuonConfig;
import dev.muon.golden.Float64Update;

import java.util.Random;
import java.util.function.Consumer;

/**
 * muon-djl's {@link Muon} on one float64 weight beside float64 references fed the same gradients, for the tests that
 * compare a setting with the reference written from the formulas ({@link Float64Update}).
 */
final class MuonReferenceRun {
    private MuonReferenceRun() {
    }

    /**
     * Steps a weight with {@link Muon}, handing each gradient to the references first.
     *
     * @param manager   the manager the run's arrays are made under, and freed with
     * @param config    Muon's config
     * @param values    the weight's starting values, row-major
     * @param shape     the weight's shape
     * @param random    the source of the gaussian gradients
     * @param steps     how many steps
     * @param reference what steps the references with each gradient
     * @return the weight's values after the steps
     */
    static double[] run(NDManager manager, MuonConfig config, double[] values, long[] shape, Random random,
                        int steps, Consumer<double[]> reference) {
        try (NDManager scope = manager.newSubManager()) {
            NDArray weight = scope.create(values, new Shape(shape));
            ParamBlock block = new ParamBlock().param("w", weight);
            Muon muon = Muon.builder().optBlock(block).optConfig(config).build();
            String id = block.getParameters().get(0).getValue().getId();
            for (int step = 0; step < steps; step++) {
                double[] g = Float64Update.gaussian(random, shape);
                reference.accept(g);
                muon.update(id, weight, scope.create(g, new Shape(shape)));
            }
            return weight.toDoubleArray();
        }
    }
}
