package dev.muon.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.util.PairList;
import dev.muon.MuonConfig;
import dev.muon.golden.ConformanceMatrix;
import dev.muon.golden.ConformanceMatrix.Dtype;
import dev.muon.golden.ConformanceMatrix.Row;
import dev.muon.golden.Float64Update;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Arrays;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The conformance matrix ({@link ConformanceMatrix}) in muon-djl: every row × parameter dtype (float64, float32,
 * float16; bfloat16, which DJL 0.36.0 cannot hold) × driver (DJL's {@code Trainer} with its {@code ParameterStore},
 * and {@code Optimizer.update} called directly), each cell within its dtype's bound of the same float64 reference
 * muon-core's matrix uses, or refused at build as {@link #refusal} declares, with the message naming the setting.
 * A cell that neither matches nor is refused as declared fails. muon-djl keeps its state beside the parameters and
 * has no distributed mode, so those columns have one value here.
 */
class ConformanceMatrixDjlTest {
    /** How the optimizer is driven. */
    enum Driver { TRAINER, UPDATE }

    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    static Stream<Arguments> cells() {
        return Stream.of(Dtype.values()).flatMap(dtype -> ConformanceMatrix.rows(dtype).stream()
                .flatMap(row -> Stream.of(Driver.values()).map(driver -> Arguments.of(row, dtype, driver))));
    }

    /**
     * What muon-djl refuses, by cell, as a part of the message: bfloat16 parameters (DJL's bfloat16 arrays abort the
     * JVM), the settings DJL has no operation for (the exact SVD, bfloat16 iterations or momentum), the native
     * symmetric and Gram kernels in a float64 iteration (they are float32 kernels), Muown (not mapped), and the
     * config's own refusals (Hyperball with cautious decay; Muown with bfloat16 momentum or a weight hook).
     */
    static String refusal(Row row, Dtype dtype) {
        if (row.config() == null) {
            if (!row.has("Muown")) {
                return "cautiousWeightDecay must be false with hyperball";
            }
            return row.has("bfloat16 momentum") ? "momentumPrecision must be PARAMETER with muown"
                    : row.has("Hyperball") || row.has("Hyperball radius 3") ? "hyperball must be off with muown"
                    : row.has("RadialBrake") ? "radialBrake must be off with muown"
                    : row.has("RelativeUpdate") ? "relativeUpdate must be off with muown"
                    : "updateFloor must be off with muown";
        }
        MuonConfig c = row.config();
        if (dtype == Dtype.BFLOAT16) {
            return "muon-djl does not update bfloat16 parameters";
        }
        if (c.muown() != null) {
            return "muown = on is not supported by muon-djl";
        }
        if (c.momentumPrecision() == dev.muon.MomentumPrecision.BFLOAT16) {
            return "momentumPrecision = BFLOAT16 is not supported by muon-djl";
        }
        if (c.orthogonalization() == dev.muon.Orthogonalization.EXACT_SVD) {
            return "orthogonalization = EXACT_SVD is not supported by muon-djl";
        }
        if (c.nsPrecision() == NsPrecision.BFLOAT16) {
            return "nsPrecision = BFLOAT16 is not supported by muon-djl";
        }
        if (c.nsPrecision() == NsPrecision.FLOAT64
                && (c.nsAlgorithm() == NsAlgorithm.SYMMETRIC || c.nsAlgorithm() == NsAlgorithm.GRAM)) {
            return "nsAlgorithm = " + c.nsAlgorithm() + " is not supported by muon-djl with nsPrecision = FLOAT64";
        }
        return null;
    }

    @ParameterizedTest(name = "{1} {2}: {0}")
    @MethodSource("cells")
    void cell_matchesTheReference_orIsRefusedAsDeclared(Row row, Dtype dtype, Driver driver) {
        String refusal = refusal(row, dtype);
        if (row.config() == null) {
            assertTrue(row.refusal().startsWith(refusal), row.refusal());
            return;
        }
        if (dtype == Dtype.BFLOAT16) {
            // DJL 0.36.0 aborts the JVM creating a bfloat16 array, so the rule is checked without one.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> DjlSupport.requireSupported(DataType.BFLOAT16, "parameter 'hidden'"));
            assertTrue(e.getMessage().startsWith(refusal), e.getMessage());
            return;
        }
        DataType type = switch (dtype) {
            case FLOAT64 -> DataType.FLOAT64;
            case FLOAT32 -> DataType.FLOAT32;
            case FLOAT16 -> DataType.FLOAT16;
            case BFLOAT16 -> throw new AssertionError("handled above");
        };
        Random random = new Random(row.name().hashCode() * 31L + dtype.ordinal());
        Shape shape = new Shape(row.shape());
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray weight = scope.create(Float64Update.gaussian(random, row.shape()), shape).toType(type, false);
            double[] start = Measures.values(weight);
            Float64Update reference = ConformanceMatrix.reference(row, start);
            if (refusal != null) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Muon.builder()
                        .optBlock(new ParamBlock().param("hidden", weight)).optConfig(row.config()).build());
                assertTrue(e.getMessage().contains(refusal), e.getMessage());
                assertTrue(Arrays.equals(start, Measures.values(weight)), "the refused build changed the parameter");
                return;
            }
            if (driver == Driver.UPDATE) {
                ParamBlock block = new ParamBlock().param("hidden", weight);
                Muon muon = Muon.builder().optBlock(block).optConfig(row.config()).build();
                String id = block.getParameters().get(0).getValue().getId();
                for (int step = 1; step <= ConformanceMatrix.STEPS; step++) {
                    NDArray g = scope.create(Float64Update.gaussian(random, row.shape()), shape).toType(type, false);
                    reference.step(Measures.values(g));
                    muon.update(id, weight, g);
                }
            } else if (type == DataType.FLOAT64) {
                // DJL's own Trainer cannot step float64 parameters: its first-step gradient check reads the gradients'
                // sum with getFloat(). Asserted with DJL's Adam as the control, so a DJL that lifts it fails here and
                // these cells run.
                for (ai.djl.training.optimizer.Optimizer optimizer : new ai.djl.training.optimizer.Optimizer[] {
                    Muon.builder().optConfig(row.config()).build(), ai.djl.training.optimizer.Optimizer.adam().build()}) {
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> train(optimizer, weight.duplicate(), random, reference, scope));
                    assertEquals(DJL_FLOAT64_TRAINER, e.getMessage());
                }
                return;
            } else {
                train(Muon.builder().optConfig(row.config()).build(), weight, random, reference, scope);
            }
            assertEquals(type, weight.getDataType(), "the parameter keeps its dtype");
            double error = Measures.relativeError(Measures.values(weight), reference.p);
            double bound = dtype.bound(row.config());
            assertTrue(error <= bound, dtype + " " + driver + " " + row + ": parameter rel error " + error
                    + " (bound " + bound + ")");
        }
    }

    /** DJL 0.36.0's Trainer on float64 parameters, whatever the optimizer. */
    private static final String DJL_FLOAT64_TRAINER = "DataType mismatch, Required float, Actual float64";

    /** DJL's loop: forward, the loss Σ w ⊙ g (whose gradient is g) through a collector, then {@code step()}. */
    private static void train(ai.djl.training.optimizer.Optimizer optimizer, NDArray weight, Random random,
                              Float64Update reference, NDManager scope) {
        Shape shape = weight.getShape();
        DataType type = weight.getDataType();
        Identity block = new Identity(weight);
        ai.djl.training.DefaultTrainingConfig config = optimizer instanceof Muon muon
                ? muon.trainingConfig(Loss.l2Loss())
                : new ai.djl.training.DefaultTrainingConfig(Loss.l2Loss()).optOptimizer(optimizer);
        try (Model model = Model.newInstance("conformance")) {
            model.setBlock(block);
            try (Trainer trainer = model.newTrainer(config.optDevices(new Device[] {Device.cpu()}))) {
                trainer.initialize(new Shape(1));
                for (int step = 1; step <= ConformanceMatrix.STEPS; step++) {
                    NDArray g = scope.create(Float64Update.gaussian(random, shape.getShape()), shape)
                            .toType(type, false);
                    reference.step(Measures.values(g));
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDArray w = trainer.forward(new NDList(scope.zeros(new Shape(1)))).singletonOrThrow();
                        collector.backward(w.mul(g).sum());
                    }
                    trainer.step();
                }
            }
        }
    }

    /** A block whose output is its one parameter: the loss's gradient reaches it unchanged. */
    private static final class Identity extends AbstractBlock {
        private final Parameter hidden;

        Identity(NDArray value) {
            hidden = addParameter(Parameter.builder().setName("hidden").setType(Parameter.Type.WEIGHT)
                    .optArray(value).build());
        }

        @Override
        protected NDList forwardInternal(ParameterStore store, NDList inputs, boolean training,
                                         PairList<String, Object> params) {
            return new NDList(store.getValue(hidden, inputs.head().getDevice(), training));
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return new Shape[] {hidden.getArray().getShape()};
        }
    }
}
