package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.internal.NewtonSchulzAccess;
import dev.muon.internal.NewtonSchulzKernels;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NewtonSchulzAccess#orthogonalizeWith}: the plain loop of {@link NewtonSchulz} that muon-cuda shares, reached
 * as muon-cuda reaches it, with the stages of {@link NewtonSchulzKernels} taken over or declined, checked on the CPU
 * with stages written on libtorch ops.
 */
@ExtendWith(NativeScopePerTest.class)
class NewtonSchulzKernelsTest {
    @BeforeEach
    void seed() {
        torch.manual_seed(4321);
    }

    /** Stages that count how often each is offered and take it only where a test installs a body. */
    private static final class Recorder implements NewtonSchulzKernels {
        interface Stage2 {
            void write(Tensor out, Tensor in);
        }

        interface Polynomial {
            void write(Tensor out, Tensor gram, int step);
        }

        Stage2 normalize;
        Stage2 gram;
        Polynomial polynomial;
        int normalizeOffers;
        long[] normalizeInputShape;
        int gramOffers;
        int polynomialOffers;

        @Override
        public boolean normalizeInto(Tensor out, Tensor update) {
            normalizeOffers++;
            normalizeInputShape = update.shape();
            if (normalize == null) {
                return false;
            }
            normalize.write(out, update);
            return true;
        }

        @Override
        public boolean gramInto(Tensor out, Tensor x) {
            gramOffers++;
            if (gram == null) {
                return false;
            }
            gram.write(out, x);
            return true;
        }

        @Override
        public boolean polynomialInto(Tensor out, Tensor gram, int step) {
            polynomialOffers++;
            if (polynomial == null) {
                return false;
            }
            polynomial.write(out, gram, step);
            return true;
        }
    }

    static Stream<Arguments> declinedCases() {
        // On the CPU, AUTO picks GRAM at 256x512 and SYMMETRIC (with OpenBLAS) at 700x300: the entry must still
        // run the plain loop. Batches, tall inputs and every precision take the same path.
        return Stream.of(
                Arguments.of(new long[]{256, 512}, NsPrecision.FLOAT32),
                Arguments.of(new long[]{700, 300}, NsPrecision.FLOAT32),
                Arguments.of(new long[]{3, 40, 96}, NsPrecision.FLOAT32),
                Arguments.of(new long[]{3, 96, 40}, NsPrecision.BFLOAT16),
                Arguments.of(new long[]{64, 130}, NsPrecision.FLOAT64));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("declinedCases")
    void orthogonalizeWith_everyStageDeclined_isTheGemmKernelBitForBit(long[] shape, NsPrecision precision) {
        Tensor g = torch.randn(shape);
        NewtonSchulzConfig auto = NewtonSchulzConfig.defaults().withNsPrecision(precision);
        double[] gemm = Tensors.values(new NewtonSchulz(auto.withNsAlgorithm(NsAlgorithm.GEMM)).orthogonalize(g));
        Recorder declines = new Recorder();

        double[] got = Tensors.values(NewtonSchulzAccess.orthogonalizeWith(new NewtonSchulz(auto), g, declines));

        assertArrayEquals(gemm, got);
        assertEquals(1, declines.normalizeOffers, "normalisation offers");
        assertArrayEquals(shape, declines.normalizeInputShape, "the normalisation is offered the input as passed");
        assertEquals(auto.nsSteps(), declines.gramOffers, "Gram product offers");
        assertEquals(auto.nsSteps(), declines.polynomialOffers, "polynomial offers");
    }

    @Test
    void orthogonalizeWith_takenGramStage_isWhatTheLoopUses() {
        // With A = 0 the declined polynomial is B = a·I, so each step scales X by a exactly (float64).
        Tensor g = torch.randn(48, 80).to(ScalarType.Double);
        NewtonSchulzConfig config = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.FLOAT64);
        NewtonSchulz ns = new NewtonSchulz(config);
        Tensor expected = torch.empty(48, 80).to(ScalarType.Double);
        ns.normalizeInto(expected, g);
        for (int k = 0; k < config.nsSteps(); k++) {
            expected = expected.mul(new org.bytedeco.pytorch.Scalar(config.nsCoefficients().at(k).a()));
        }
        Recorder zeroGram = new Recorder();
        zeroGram.gram = (out, x) -> out.zero_();

        Tensor got = NewtonSchulzAccess.orthogonalizeWith(ns, g, zeroGram);

        assertArrayEquals(Tensors.values(expected), Tensors.values(got));
        assertEquals(config.nsSteps(), zeroGram.gramOffers);
    }

    static Stream<Arguments> takenShapes() {
        return Stream.of(Arguments.of(new long[]{60, 150}), Arguments.of(new long[]{150, 60}),
                Arguments.of(new long[]{2, 90, 30}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("takenShapes")
    void orthogonalizeWith_everyStageTaken_agreesWithLibtorchsStages(long[] shape) {
        // Polar Express: per-step coefficients and a normalisation safety, both of which the stages must honour.
        NewtonSchulzConfig config = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.FLOAT64)
                .withNsCoefficients(CoefficientSchedule.polarExpress5()).withNsSteps(5);
        Tensor g = torch.randn(shape).to(ScalarType.Double);
        double[] gemm = Tensors.values(new NewtonSchulz(config.withNsAlgorithm(NsAlgorithm.GEMM)).orthogonalize(g));
        Recorder takes = new Recorder();
        takes.normalize = (out, update) -> {
            Tensor wide = update.size(-2) > update.size(-1) ? update.mT() : update;
            Tensor norm = wide.square().sum(new long[]{-2, -1}, true, null).sqrt()
                    .mul(new org.bytedeco.pytorch.Scalar(config.nsCoefficients().normalizationSafety()))
                    .clamp_min(new org.bytedeco.pytorch.Scalar(config.eps()));
            out.copy_(wide.div(norm));
        };
        takes.gram = (out, x) -> out.copy_(x.matmul(x.mT()));
        takes.polynomial = (out, a, k) -> {
            Coefficients c = config.nsCoefficients().at(k);
            Tensor eye = torch.eye(a.size(-1)).to(ScalarType.Double).expand_as(a);
            out.copy_(eye.mul(new org.bytedeco.pytorch.Scalar(c.a()))
                    .add(a.mul(new org.bytedeco.pytorch.Scalar(c.b())))
                    .add(a.matmul(a).mul(new org.bytedeco.pytorch.Scalar(c.c()))));
        };

        double[] got = Tensors.values(NewtonSchulzAccess.orthogonalizeWith(new NewtonSchulz(config), g, takes));

        assertTrue(Tensors.relativeError(got, gemm) <= 1e-12, "taken stages stray from libtorch's by "
                + Tensors.relativeError(got, gemm));
        assertEquals(1, takes.normalizeOffers);
        assertArrayEquals(shape, takes.normalizeInputShape, "the normalisation is offered the input as passed");
        assertEquals(5, takes.gramOffers);
        assertEquals(5, takes.polynomialOffers);
    }

    static Stream<Arguments> badArguments() {
        Supplier<NewtonSchulzKernels> stages = Recorder::new;
        Supplier<Object> ns = () -> new NewtonSchulz(NewtonSchulzConfig.defaults());
        return Stream.of(
                Arguments.of("update_undefined_isRejected", ns, (Supplier<Tensor>) Tensor::new, stages,
                        IllegalArgumentException.class, "update must be a defined tensor"),
                Arguments.of("update_1d_isRejected", ns, (Supplier<Tensor>) () -> torch.randn(8), stages,
                        IllegalArgumentException.class, "update must be 2-D or a 3-D batch of matrices, got shape [8]"),
                Arguments.of("update_integer_isRejected", ns,
                        (Supplier<Tensor>) () -> torch.ones(3, 3).to(ScalarType.Int), stages,
                        IllegalArgumentException.class, "update must be floating point, got dtype Int"),
                Arguments.of("device_null_isRejected", ns, (Supplier<Tensor>) () -> torch.randn(4, 6),
                        (Supplier<NewtonSchulzKernels>) () -> null, NullPointerException.class,
                        "device must not be null"),
                Arguments.of("newtonSchulz_null_isRejected", (Supplier<Object>) () -> null,
                        (Supplier<Tensor>) () -> torch.randn(4, 6), stages, NullPointerException.class,
                        "newtonSchulz must not be null"),
                Arguments.of("newtonSchulz_anotherOrthogonalizer_isRejected",
                        (Supplier<Object>) () -> new SvdPolarFactor(), (Supplier<Tensor>) () -> torch.randn(4, 6),
                        stages, IllegalArgumentException.class, "newtonSchulz must be a "
                                + "dev.muon.orthogonalize.NewtonSchulz, got dev.muon.orthogonalize.SvdPolarFactor"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badArguments")
    void orthogonalizeWith_badArgument_isRejected(String name, Supplier<Object> newtonSchulz, Supplier<Tensor> update,
            Supplier<NewtonSchulzKernels> device, Class<? extends Throwable> type, String message) {
        Object ns = newtonSchulz.get();
        Tensor t = update.get();
        NewtonSchulzKernels stages = device.get();

        Throwable e = assertThrows(type, () -> NewtonSchulzAccess.orthogonalizeWith(ns, t, stages));

        assertEquals(message, e.getMessage());
        if (stages instanceof Recorder recorder) {
            assertEquals(0, recorder.normalizeOffers + recorder.gramOffers + recorder.polynomialOffers,
                    "a rejected call offered a stage");
        }
    }

    @Test
    void register_aSecondLoop_isRejected() {
        new NewtonSchulz(NewtonSchulzConfig.defaults());   // its class registered the one loop

        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> NewtonSchulzAccess.register(SvdPolarFactor.class, (svd, update, device) -> update));

        assertEquals("a Newton–Schulz loop is registered already, by dev.muon.orthogonalize.NewtonSchulz",
                e.getMessage());
    }
}
