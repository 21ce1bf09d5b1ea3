package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NativeKernels;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static dev.muon.golden.ErrorMeasures.minus;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Same-shape batching in {@link Muon#step()}: the rule of {@link Muon#BATCH_MAX_SIDE}, and that a batched step
 * equals the per-parameter one up to the rounding of batched against single matrix products.
 */
@ExtendWith(NativeScopePerTest.class)
class MuonSameShapeBatchingTest {
    private static final int STEPS = 5;

    @BeforeEach
    void seed() {
        torch.manual_seed(11);
    }

    /** One dtype setting: parameters, Newton–Schulz precision, and the batched-vs-single tolerance. */
    record Precision(String label, ScalarType paramType, NsPrecision ns, double tolerance) {
        @Override
        public String toString() {
            return label;
        }
    }

    static Stream<Arguments> precisions() {
        // The golden tolerances of the two exact precisions: batching must not cost more than the rounding the
        // golden tests already allow between implementations.
        Precision float64 = new Precision("float64", ScalarType.Double, NsPrecision.FLOAT64, 1e-12);
        Precision float32 = new Precision("float32", ScalarType.Float, NsPrecision.FLOAT32, 1e-5);
        return Stream.of(float64, float32).flatMap(p -> Stream.of(Arguments.of(p, true), Arguments.of(p, false)));
    }

    @ParameterizedTest(name = "{0} nesterov={1}")
    @MethodSource("precisions")
    void batched_matchesUnbatched(Precision precision, boolean nesterov) {
        List<long[]> shapes = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            shapes.add(new long[]{64, 32});
        }
        for (int i = 0; i < 3; i++) {
            shapes.add(new long[]{32, 64});
        }
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withNesterov(nesterov)
                .withNsPrecision(precision.ns());
        Run on = new Run(shapes, precision.paramType(), config);
        Run off = on.copyWith(config.withBatchSameShape(false));
        assertEquals(2, on.muon.sameShapeBatches(0).size(), "one batch of 64x32 and one of 32x64");
        assertTrue(off.muon.sameShapeBatches(0).isEmpty());

        for (int k = 1; k <= STEPS; k++) {
            on.stepWith(off.setRandomGradients());
            off.muon.step();
            assertEquals(9, on.muon.batchedLastStep(), "step " + k + " ran every parameter in a batch");
            assertEquals(0, off.muon.batchedLastStep());
            on.assertClose(off, precision.tolerance(), "step " + k);
        }
    }

    static Stream<Arguments> ruleTable() {
        MuonConfig d = MuonConfig.defaults();
        MuonConfig bf16 = d.withNsPrecision(NsPrecision.BFLOAT16);
        MuonConfig gemm = d.withNsAlgorithm(NsAlgorithm.GEMM);
        int max = Muon.BATCH_MAX_SIDE;
        int bf16Max = Muon.BATCH_MAX_SIDE_BFLOAT16_CPU;
        int symmetric = NewtonSchulz.SYMMETRIC_MIN_ROWS;
        boolean nativeKernel = NativeKernels.isAvailable();
        return Stream.of(
                rule("small_two_isBatched", d, 64, 32, 2, true, true),
                rule("small_one_isNot", d, 64, 32, 1, true, false),
                rule("switchOff_isNot", d.withBatchSameShape(false), 64, 32, 8, true, false),
                rule("exactSvd_isNot", d.withOrthogonalization(Orthogonalization.EXACT_SVD), 64, 32, 8, true,
                        false),
                rule("requestedSymmetric_isNot", d.withNsAlgorithm(NsAlgorithm.SYMMETRIC), 64, 32, 8, true, false),
                rule("requestedGram_isNot", d.withNsAlgorithm(NsAlgorithm.GRAM), 64, 32, 8, true, false),
                rule("gemm_isBatched", gemm, 64, 32, 8, true, true),
                // Where AUTO gives one matrix the symmetric kernel (CPU, float32/float64, short side >= 256) or the
                // Gram kernel (CPU, any dtype, short side >= 256, aspect >= 2).
                rule("cpu_float32_256_keepsTheSymmetricKernel", d, 256, 256, 24, true, false),
                rule("cpu_float64_tall_keepsTheGramKernel", d.withNsPrecision(NsPrecision.FLOAT64),
                        max, symmetric, 4, true, false),
                rule("cpu_bfloat16_wide_keepsTheGramKernel", bf16, symmetric, max, 4, true, false),
                rule("cpu_shortSideBelowSymmetric_isBatched", d, symmetric - 1, max, 4, true, true),
                rule("cpu_bfloat16_256_isBatched", bf16, 256, 256, 24, true, true),
                rule("cpu_gemm_256_isBatched", gemm, 256, 256, 24, true, true),
                rule("gpu_float32_256_isBatched", d, 256, 256, 24, false, true),
                rule("gpu_maxSide_atBound_isBatched", d, max, max, 2, false, true),
                rule("gpu_rows_aboveBound_isNot", d, max + 1, 8, 4, false, false),
                rule("cpu_cols_aboveBound_isNot", bf16, 8, bf16Max + 1, 4, true, false),
                rule("gemm_gptWidth_isNot", gemm, 768, 768, 16, true, false),
                // bfloat16 on a CPU: batched up to its own, measured bound, below the symmetric kernel's rows, which
                // start at 512 where muon-core's native half product runs and at 1536 where it does not.
                rule("cpu_bfloat16_belowTheNativeSymmetricKernel_isBatched", bf16,
                        NewtonSchulz.BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS - 1,
                        NewtonSchulz.BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS - 1, 16, true, true),
                rule("cpu_bfloat16_gptWidth_isBatched_unlessNative", bf16, 768, 768, 16, true, !nativeKernel),
                rule("cpu_bfloat16_atItsBound_isBatched_unlessNative", bf16, bf16Max, bf16Max, 2, true,
                        !nativeKernel),
                rule("cpu_bfloat16_aboveItsBound_isNot", bf16, bf16Max + 1, 8, 2, true, false),
                rule("cpu_bfloat16_gemm_aboveTheOtherBound_isBatched", bf16.withNsAlgorithm(NsAlgorithm.GEMM),
                        max + 1, max + 1, 2, true, true),
                rule("gpu_bfloat16_aboveTheOtherBound_isNot", bf16, max + 1, max + 1, 2, false, false),
                rule("cpu_float32_gemm_aboveTheOtherBound_isNot", gemm, max + 1, 8, 2, true, false));
    }

    private static Arguments rule(String name, MuonConfig config, long rows, long cols, int count, boolean cpu,
                                  boolean expected) {
        return Arguments.of(name, config, rows, cols, count, cpu, expected);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("ruleTable")
    void rule_batchesOnlyWhereDocumented(String name, MuonConfig config, long rows, long cols, int count,
                                         boolean cpu, boolean expected) {
        assertEquals(expected, SameShapeBatch.allows(config, rows, cols, count, cpu));
    }

    static Stream<Arguments> chunkTable() {
        long square768 = 768L * 768;
        long budget = Muon.BATCH_MAX_ELEMENTS;
        int per768 = (int) (budget / square768);
        return Stream.of(
                Arguments.of("fits", per768, square768, new int[]{per768}),
                Arguments.of("twoEqual", 2 * per768, square768, new int[]{per768, per768}),
                Arguments.of("unevenSplitsWithinOne", 2 * per768 + 1, square768,
                        new int[]{(2 * per768 + 3) / 3, (2 * per768 + 2) / 3, (2 * per768 + 1) / 3}),
                Arguments.of("atTheBudget", (int) (budget / 4096), 4096L, new int[]{(int) (budget / 4096)}),
                Arguments.of("oneOverTheBudget", (int) (budget / 4096) + 1, 4096L,
                        new int[]{(int) (budget / 8192) + 1, (int) (budget / 8192)}),
                Arguments.of("hugeMatrices_pairsAtLeast", 3, budget, new int[]{2, 1}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("chunkTable")
    void chunks_splitIntoEqualBatchesWithinTheElementBudget(String name, int count, long elements, int[] sizes) {
        List<int[]> chunks = SameShapeBatch.chunks(count, elements);
        int first = 0;
        assertEquals(sizes.length, chunks.size(), name);
        for (int i = 0; i < sizes.length; i++) {
            assertArrayEquals(new int[]{first, sizes[i]}, chunks.get(i), name + " chunk " + i);
            assertTrue(sizes[i] * elements <= Muon.BATCH_MAX_ELEMENTS || sizes[i] <= Muon.BATCH_MIN_PARAMETERS,
                    name + " chunk " + i + " exceeds the budget");
            first += sizes[i];
        }
        assertEquals(count, first, name + ": every matrix in exactly one chunk");
    }

    @Test
    void plan_splitsAShapeAboveTheElementBudget_andStepsEveryChunk() {
        // 2^23 / (1024 x 512) = 16 per batch: 40 matrices become batches of 14, 13 and 13, and a step runs all.
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16)
                .withNsAlgorithm(NsAlgorithm.GEMM);
        List<Tensor> big = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            big.add(param(ScalarType.Float, 1024, 512));
        }
        Muon muon = Muon.of(big, config);
        List<List<Tensor>> batches = muon.sameShapeBatches(0);
        assertEquals(3, batches.size());
        assertMembers(big.subList(0, 14), batches.get(0));
        assertMembers(big.subList(14, 27), batches.get(1));
        assertMembers(big.subList(27, 40), batches.get(2));
        for (Tensor p : big) {
            p.mutable_grad().put(torch.randn(1024, 512));
        }
        muon.step();
        assertEquals(40, muon.batchedLastStep());
    }

    @Test
    void plan_onCpu_leavesTheSymmetricKernelsMatricesAlone() {
        MuonConfig config = MuonConfig.defaults();
        List<Tensor> params = List.of(param(ScalarType.Float, 256, 256), param(ScalarType.Float, 256, 256),
                param(ScalarType.Float, 8, 300), param(ScalarType.Float, 8, 300));
        Muon muon = Muon.of(params, config);
        assertEquals(1, muon.sameShapeBatches(0).size());
        assertMembers(params.subList(2, 4), muon.sameShapeBatches(0).get(0));
        assertEquals(2, Muon.of(clones(params), config.withNsPrecision(NsPrecision.BFLOAT16))
                .sameShapeBatches(0).size());
    }

    @Test
    void mixedShapes_inOneGroup_formOneBatchPerShapeAndDtype() {
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withConvWeights(ConvWeights.FLATTEN)
                .withStackedWeights(StackedWeights.BATCH);
        List<Tensor> params = List.of(
                param(ScalarType.Float, 16, 8),      // 0: batch A
                param(ScalarType.Float, 8, 16),      // 1: batch B
                param(ScalarType.Float, 16, 8),      // 2: batch A
                param(ScalarType.Float, 12, 12),     // 3: alone
                param(ScalarType.Double, 16, 8),     // 4: alone, another dtype
                param(ScalarType.Float, 520, 4),     // 5: above the bound
                param(ScalarType.Float, 520, 4),     // 6: above the bound
                param(ScalarType.Float, 16, 2, 2, 2), // 7: a conv filter, flattened to 16x8: batch A
                param(ScalarType.Float, 2, 16, 8),   // 8: a stack, a batch already
                param(ScalarType.Float, 8, 16),      // 9: batch B
                param(ScalarType.Float, 16, 8));     // 10: batch A
        Muon muon = Muon.of(params, config);
        List<List<Tensor>> batches = muon.sameShapeBatches(0);
        assertEquals(2, batches.size());
        assertMembers(List.of(params.get(0), params.get(2), params.get(7), params.get(10)), batches.get(0));
        assertMembers(List.of(params.get(1), params.get(9)), batches.get(1));

        Muon off = Muon.of(clones(params), config.withBatchSameShape(false));
        for (int k = 1; k <= 3; k++) {
            List<Tensor> offParams = off.parameters(0);
            for (int i = 0; i < params.size(); i++) {
                Tensor grad = torch.randn(params.get(i).shape()).to(params.get(i).scalar_type());
                params.get(i).mutable_grad().put(grad);
                offParams.get(i).mutable_grad().put(grad.clone());
            }
            muon.step();
            off.step();
            assertEquals(6, muon.batchedLastStep());
            for (int i = 0; i < params.size(); i++) {
                double error = Tensors.relativeError(params.get(i), Tensors.values(offParams.get(i)));
                assertTrue(error <= 1e-5, "step " + k + " parameter " + i + ": rel error " + error);
            }
        }
    }

    @Test
    void switchOff_takesThePerParameterPath_bitForBit() {
        // Off, a group of same-shape parameters must step exactly as each parameter alone.
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withBatchSameShape(false);
        List<long[]> shapes = List.of(new long[]{24, 16}, new long[]{24, 16}, new long[]{24, 16});
        Run grouped = new Run(shapes, ScalarType.Float, config);
        List<Tensor> alone = clones(grouped.params);
        List<Muon> singles = new ArrayList<>();
        for (Tensor p : alone) {
            singles.add(Muon.of(List.of(p), config));
        }
        assertTrue(grouped.muon.sameShapeBatches(0).isEmpty());
        for (int k = 1; k <= 3; k++) {
            List<Tensor> grads = grouped.setRandomGradients();
            grouped.muon.step();
            assertEquals(0, grouped.muon.batchedLastStep());
            for (int i = 0; i < alone.size(); i++) {
                alone.get(i).mutable_grad().put(grads.get(i).clone());
                singles.get(i).step();
                assertArrayEquals(Tensors.values(alone.get(i)), Tensors.values(grouped.params.get(i)),
                        "step " + k + " parameter " + i);
            }
        }
    }

    @Test
    void parameterWithoutGradient_inABatch_isSkipped() {
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.5)
                .withNsPrecision(NsPrecision.FLOAT64);
        List<long[]> shapes = List.of(new long[]{20, 12}, new long[]{20, 12}, new long[]{20, 12});
        Run on = new Run(shapes, ScalarType.Double, config);
        Run off = on.copyWith(config.withBatchSameShape(false));
        assertEquals(1, on.muon.sameShapeBatches(0).size());

        // Step 1: every parameter has a gradient, so every one has momentum afterwards.
        on.stepWith(off.setRandomGradients());
        off.muon.step();
        assertEquals(3, on.muon.batchedLastStep());

        // Step 2: the middle parameter has none; it and its momentum must not move, the other two still batch.
        Tensor skipped = on.params.get(1);
        double[] valueBefore = Tensors.values(skipped);
        double[] momentumBefore = Tensors.values(on.muon.momentumBuffer(skipped).orElseThrow());
        List<Tensor> grads = off.setRandomGradients();
        off.params.get(1).mutable_grad().put(new Tensor());
        on.params.get(0).mutable_grad().put(grads.get(0).clone());
        on.params.get(1).mutable_grad().put(new Tensor());
        on.params.get(2).mutable_grad().put(grads.get(2).clone());
        on.muon.step();
        off.muon.step();
        assertEquals(2, on.muon.batchedLastStep());
        assertArrayEquals(valueBefore, Tensors.values(skipped), "no decay and no update without a gradient");
        assertArrayEquals(momentumBefore, Tensors.values(on.muon.momentumBuffer(skipped).orElseThrow()));
        on.assertClose(off, 1e-12, "step 2");

        // Step 3: one gradient only, which is below the rule's count: the per-parameter path.
        Tensor grad = torch.randn(20, 12).to(ScalarType.Double);
        for (Run run : List.of(on, off)) {
            for (Tensor p : run.params) {
                p.mutable_grad().put(new Tensor());
            }
            run.params.get(2).mutable_grad().put(grad.clone());
            run.muon.step();
        }
        assertEquals(0, on.muon.batchedLastStep());
        on.assertClose(off, 1e-12, "step 3");
    }

    @Test
    void groups_areBatchedSeparately() {
        // Same shape, two groups: two batches, each with its group's lr.
        List<Tensor> first = List.of(param(ScalarType.Float, 10, 6), param(ScalarType.Float, 10, 6));
        List<Tensor> second = List.of(param(ScalarType.Float, 10, 6), param(ScalarType.Float, 10, 6));
        Muon muon = Muon.builder().addGroup(first, MuonConfig.defaults().withLr(0.01))
                .addGroup(second, MuonConfig.defaults().withLr(0.02)).build();
        assertMembers(first, muon.sameShapeBatches(0).get(0));
        assertMembers(second, muon.sameShapeBatches(1).get(0));
        assertEquals(1, muon.sameShapeBatches(0).size());
        assertEquals(1, muon.sameShapeBatches(1).size());
    }

    @Test
    void plan_distributed_keepsOnlyTheParametersThisRankUpdates() {
        // A rank batches the parameters it owns: positions are the optimizer's, offset by the group's first.
        MuonConfig config = MuonConfig.defaults();
        Orthogonalizer ns = new NewtonSchulz(config.newtonSchulz());
        List<ParameterState> states = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Tensor p = param(ScalarType.Float, 12, 8);
            states.add(new ParameterState(p, MatrixLayout.of(p, config, "p" + i), ns, "p" + i));
        }
        int first = 7;
        List<SameShapeBatch> odd = SameShapeBatch.plan(states, first, config, position -> position % 2 == 1);
        assertEquals(1, odd.size());
        assertArrayEquals(new int[]{7, 9, 11}, odd.get(0).positions);
        assertEquals(List.of(states.get(0), states.get(2), states.get(4)), odd.get(0).members);
        // One owned parameter of the shape is below the rule's count: no batch.
        assertTrue(SameShapeBatch.plan(states, first, config, position -> position == 8).isEmpty());
    }

    private static void assertMembers(List<Tensor> expected, List<Tensor> got) {
        assertEquals(expected.size(), got.size());
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(ParameterState.identityOf(expected.get(i)), ParameterState.identityOf(got.get(i)),
                    "member " + i);
        }
    }

    private static Tensor param(ScalarType dtype, long... shape) {
        return torch.randn(shape).to(dtype).requires_grad_(true);
    }

    private static List<Tensor> clones(List<Tensor> params) {
        List<Tensor> copies = new ArrayList<>();
        for (Tensor p : params) {
            copies.add(p.detach().clone().requires_grad_(true));
        }
        return copies;
    }

    /** Parameters, their starting values and the optimizer over them, as one group. */
    private static final class Run {
        final List<Tensor> params;
        final List<double[]> start = new ArrayList<>();
        final Muon muon;

        Run(List<long[]> shapes, ScalarType dtype, MuonConfig config) {
            this(shapes.stream().map(s -> param(dtype, s)).toList(), config);
        }

        private Run(List<Tensor> params, MuonConfig config) {
            this.params = params;
            params.forEach(p -> start.add(Tensors.values(p)));
            this.muon = Muon.of(params, config);
        }

        Run copyWith(MuonConfig config) {
            return new Run(clones(params), config);
        }

        /** Sets a fresh random gradient on every parameter and returns the gradients. */
        List<Tensor> setRandomGradients() {
            List<Tensor> grads = new ArrayList<>();
            for (Tensor p : params) {
                Tensor grad = torch.randn(p.shape()).to(p.scalar_type());
                p.mutable_grad().put(grad);
                grads.add(grad);
            }
            return grads;
        }

        /** Steps with copies of the given gradients. */
        void stepWith(List<Tensor> grads) {
            for (int i = 0; i < params.size(); i++) {
                params.get(i).mutable_grad().put(grads.get(i).clone());
            }
            muon.step();
        }

        /**
         * Compares each parameter's displacement from its start, and its momentum, with {@code other}'s. The
         * displacement, not the value: the value is mostly the starting point and would hide the update.
         */
        void assertClose(Run other, double tolerance, String where) {
            for (int i = 0; i < params.size(); i++) {
                double error = Tensors.relativeError(minus(Tensors.values(params.get(i)), start.get(i)),
                        minus(Tensors.values(other.params.get(i)), other.start.get(i)));
                assertTrue(error <= tolerance, where + " parameter " + i + ": displacement rel error " + error);
                Tensor mine = muon.momentumBuffer(params.get(i)).orElseThrow();
                Tensor theirs = other.muon.momentumBuffer(other.params.get(i)).orElseThrow();
                double momentumError = Tensors.relativeError(mine, Tensors.values(theirs));
                assertTrue(momentumError <= tolerance, where + " parameter " + i + ": momentum rel error "
                        + momentumError);
            }
        }
    }
}
