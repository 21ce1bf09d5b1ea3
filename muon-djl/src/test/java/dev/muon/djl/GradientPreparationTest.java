package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.optimizer.Optimizer;
import dev.muon.MuonConfig;
import dev.muon.golden.Float64Update;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * DJL's own gradient settings on muon-djl's optimizers ({@code setRescaleGrad}, {@code optClipGrad}): a step with
 * them is, bit for bit, the step without them on the gradient rescaled and clipped as DJL's optimizers do it, for a
 * Muon matrix and an AdamW bias, in the dtypes DJL trains in.
 */
class GradientPreparationTest {
    private static final int STEPS = 3;
    private static final float RESCALE = 0.5f;
    private static final float CLIP = 0.3f;
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"Muon, FLOAT32", "Muon, FLOAT16", "Muon, FLOAT64", "MuonAdamW, FLOAT32", "MuonAdamW, FLOAT16",
        "MuonAdamW, FLOAT64"})
    void rescaleAndClip_areTheStepOnThePreparedGradient(String kind, DataType dtype) {
        try (NDManager scope = manager.get().newSubManager()) {
            Random random = new Random(kind.hashCode() + dtype.ordinal());
            long[][] shapes = kind.equals("Muon") ? new long[][] {{6, 10}} : new long[][] {{6, 10}, {6}};
            List<NDArray> prepared = new ArrayList<>();
            List<NDArray> plain = new ArrayList<>();
            List<NDArray> raw = new ArrayList<>();
            for (long[] shape : shapes) {
                NDArray w = scope.create(Float64Update.gaussian(random, shape), new Shape(shape)).toType(dtype, false);
                prepared.add(w);
                plain.add(w.duplicate());
                raw.add(w.duplicate());
            }
            Run withSettings = Run.of(kind, prepared, true);
            Run without = Run.of(kind, plain, false);
            Run ignoringThem = Run.of(kind, raw, false);
            for (int step = 0; step < STEPS; step++) {
                for (int i = 0; i < shapes.length; i++) {
                    // Gradients large enough that the clip bites on some elements and not on others.
                    NDArray g = scope.create(Float64Update.gaussian(random, shapes[i]), new Shape(shapes[i]))
                            .mul(2).toType(dtype, false);
                    NDArray byHand = g.mul(RESCALE).clip(-CLIP, CLIP);
                    withSettings.update(i, g);
                    without.update(i, byHand);
                    ignoringThem.update(i, g);
                }
            }
            for (int i = 0; i < shapes.length; i++) {
                double[] got = Measures.values(prepared.get(i));
                assertArrayEquals(Measures.values(plain.get(i)), got, kind + " " + dtype + " parameter " + i);
                assertFalse(java.util.Arrays.equals(Measures.values(raw.get(i)), got),
                        "the settings change the step of parameter " + i);
            }
        }
    }

    /** One optimizer over its own copies of the weights (a Muon matrix, and for MuonAdamW an AdamW bias). */
    private record Run(Optimizer optimizer, ParamBlock block, List<NDArray> weights) {
        static Run of(String kind, List<NDArray> weights, boolean settings) {
            ParamBlock block = new ParamBlock().param("hidden", weights.get(0));
            if (weights.size() > 1) {
                block.param("bias", weights.get(1));
            }
            MuonConfig config = MuonConfig.defaults().withLr(0.05);
            if (kind.equals("Muon")) {
                Muon.Builder b = Muon.builder().optBlock(block).optConfig(config);
                return new Run(settings ? b.setRescaleGrad(RESCALE).optClipGrad(CLIP).build() : b.build(), block,
                        weights);
            }
            MuonAdamW.Builder b = MuonAdamW.builder().optBlock(block).optMuon(config).optForceMuon("hidden");
            return new Run(settings ? b.setRescaleGrad(RESCALE).optClipGrad(CLIP).build() : b.build(), block, weights);
        }

        void update(int i, NDArray grad) {
            optimizer.update(block.getParameters().get(i).getValue().getId(), weights.get(i), grad);
        }
    }
}
