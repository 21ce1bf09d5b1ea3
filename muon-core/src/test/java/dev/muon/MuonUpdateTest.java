package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MuonUpdate}: the same bits as {@link Muon#step()} for parameters and momentum buffers, and every input it
 * refuses, with nothing changed.
 */
@ExtendWith(NativeScopePerTest.class)
class MuonUpdateTest {
    private static final int STEPS = 3;

    /** Tall, wide, square, a conv filter flattened to [6, 18] and a stack of three [5, 4] matrices. */
    private static final long[][] SHAPES = {{12, 8}, {8, 12}, {10, 10}, {6, 2, 3, 3}, {3, 5, 4}};

    /** Each cell's config takes conv filters and stacks, so every layout runs. */
    private static MuonConfig base() {
        return MuonConfig.defaults().withLr(0.02).withConvWeights(ConvWeights.FLATTEN)
                .withStackedWeights(StackedWeights.BATCH);
    }

    static Stream<Arguments> cells() {
        List<Arguments> cells = new ArrayList<>();
        List<Object[]> configs = List.of(
                new Object[]{"nesterov, weight decay", base()},
                new Object[]{"no nesterov, no decay", base().withNesterov(false).withWeightDecay(0)},
                new Object[]{"cautious decay", base().withCautiousWeightDecay(true).withWeightDecay(0.3)},
                new Object[]{"adjustLr MATCH_RMS_ADAMW, extraScale", base().withAdjustLr(AdjustLr.MATCH_RMS_ADAMW)
                        .withExtraScale(1.5).withMomentum(0.9)});
        for (ScalarType dtype : List.of(ScalarType.Float, ScalarType.BFloat16, ScalarType.Double)) {
            for (Object[] config : configs) {
                cells.add(Arguments.of(dtype, config[0], config[1]));
            }
        }
        cells.add(Arguments.of(ScalarType.Float, "exact SVD", base().withOrthogonalization(
                Orthogonalization.EXACT_SVD)));
        cells.add(Arguments.of(ScalarType.Float, "bfloat16 Newton-Schulz", base().withNsPrecision(
                dev.muon.orthogonalize.NsPrecision.BFLOAT16)));
        // The weight hooks without state run within the call.
        for (ScalarType dtype : List.of(ScalarType.Float, ScalarType.Double)) {
            cells.add(Arguments.of(dtype, "RadialBrake", base().withRadialBrake(new RadialBrakeConfig(0.5, 0.75,
                    1e-12))));
            cells.add(Arguments.of(dtype, "RelativeUpdate", base().withRelativeUpdate(
                    RelativeUpdateConfig.defaults())));
            // Per unit of lr: at lr 0.02 a step of at least 0.1 of each row's norm, so that it acts.
            cells.add(Arguments.of(dtype, "update floor per row", base().withUpdateFloor(
                    new UpdateFloorConfig(5.0, true, 1e-12))));
        }
        return cells.stream();
    }

    /**
     * A {@code Muon} and the functional call, from the same parameters and gradients over several steps (one
     * parameter without a gradient at the second), end with the same parameters and buffers, bit for bit.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("cells")
    void apply_matchesMuonStep_bitForBit(ScalarType dtype, String name, MuonConfig config) {
        torch.manual_seed(7);
        List<Tensor> muonParams = new ArrayList<>();
        List<Tensor> params = new ArrayList<>();
        List<Tensor> buffers = new ArrayList<>();
        List<Tensor> initial = new ArrayList<>();
        for (long[] shape : SHAPES) {
            Tensor p = torch.randn(shape).to(dtype);
            muonParams.add(p.clone().requires_grad_(true));
            initial.add(p.clone());
            params.add(p);
            buffers.add(torch.zeros_like(p));
        }
        // Parameters of one shape would be batched: the functional call updates each on its own.
        Muon muon = Muon.of(muonParams, config.withBatchSameShape(false));
        for (int step = 0; step < STEPS; step++) {
            List<Tensor> grads = new ArrayList<>();
            for (int i = 0; i < SHAPES.length; i++) {
                boolean skipped = step == 1 && i == 2;
                Tensor g = skipped ? null : torch.randn(SHAPES[i]).to(dtype);
                grads.add(g);
                muonParams.get(i).mutable_grad().put(skipped ? new Tensor() : g.clone());
            }
            muon.step();
            MuonUpdate.apply(params, grads, buffers, config);
        }
        for (int i = 0; i < SHAPES.length; i++) {
            assertFalse(bitsEqual(initial.get(i), params.get(i)), name + ": params[" + i + "] was updated");
            assertBitsEqual(muonParams.get(i), params.get(i), name + ": params[" + i + "]");
            assertBitsEqual(muon.momentumBuffer(muonParams.get(i)).orElseThrow(), buffers.get(i),
                    name + ": momentumBuffers[" + i + "]");
        }
        muon.close();
    }

    @Test
    void undefinedAndNullGradients_skipTheirParameter_bufferAndAll() {
        torch.manual_seed(3);
        List<Tensor> params = List.of(torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3));
        List<Tensor> buffers = List.of(torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3));
        List<Tensor> before = copies(params, buffers);
        MuonUpdate.apply(params, Arrays.asList(null, new Tensor(), torch.randn(4, 3)), buffers,
                MuonConfig.defaults());
        for (int i = 0; i < 2; i++) {
            assertBitsEqual(before.get(i), params.get(i), "params[" + i + "]");
            assertBitsEqual(before.get(3 + i), buffers.get(i), "momentumBuffers[" + i + "]");
        }
        assertFalse(before.get(2).equal(params.get(2)), "params[2] had a gradient");
        assertFalse(before.get(5).equal(buffers.get(2)), "momentumBuffers[2] advanced");
    }

    @Test
    void nullArguments_areRejected() {
        List<Tensor> one = List.of(torch.randn(2, 2));
        assertEquals("params must not be null", assertThrows(NullPointerException.class,
                () -> MuonUpdate.apply(null, one, one, MuonConfig.defaults())).getMessage());
        assertEquals("config must not be null", assertThrows(NullPointerException.class,
                () -> MuonUpdate.apply(one, one, one, null)).getMessage());
    }

    /** The inputs of one call: three parameters, the last of the same shape as the first; a row spoils one. */
    static final class Inputs {
        final List<Tensor> params = new ArrayList<>(List.of(torch.randn(4, 3), torch.randn(3, 5),
                torch.randn(4, 3)));
        final List<Tensor> grads = new ArrayList<>(List.of(torch.randn(4, 3), torch.randn(3, 5),
                torch.randn(4, 3)));
        /** Not zeros, so that an advanced buffer shows. */
        final List<Tensor> buffers = new ArrayList<>(List.of(torch.randn(4, 3), torch.randn(3, 5),
                torch.randn(4, 3)));
        MuonConfig config = MuonConfig.defaults().withLr(0.02);
    }

    static Stream<Arguments> refusals() {
        return Stream.of(
                row("grads_shorter_isRejected", in -> in.grads.remove(2),
                        "params, grads and momentumBuffers must have the same size, got 3, 2 and 3"),
                row("buffers_longer_isRejected", in -> in.buffers.add(torch.zeros(4, 3)),
                        "params, grads and momentumBuffers must have the same size, got 3, 3 and 4"),
                row("norMuon_isRefused", in -> in.config = in.config.withNorMuon(NorMuonConfig.defaults()),
                        "norMuon = on is not supported by MuonUpdate.apply: its per-row second moment is state "
                                + "that apply has no argument for; use Muon"),
                row("hyperball_isRefused", in -> in.config = in.config.withWeightDecay(0)
                                .withHyperball(HyperballConfig.defaults()),
                        "hyperball = on is not supported by MuonUpdate.apply: its radius is each parameter's norm "
                                + "when an optimizer is built, state that apply has no argument for; use Muon"),
                row("muown_isRefused", in -> in.config = in.config.withNesterov(false)
                                .withMuown(MuownConfig.defaults()),
                        "muown = on is not supported by MuonUpdate.apply: its row magnitudes, their Adam moments and "
                                + "its step count are state that apply has no argument for; use Muon"),
                row("bfloat16Momentum_isRefused",
                        in -> in.config = in.config.withMomentumPrecision(MomentumPrecision.BFLOAT16),
                        "momentumPrecision = BFLOAT16 is not supported by MuonUpdate.apply: its buffer is stored "
                                + "in bfloat16, not in the parameter's dtype; keep momentumPrecision = PARAMETER, "
                                + "or use Muon"),
                row("param_null_isRejected", in -> in.params.set(2, null), "params[2] is null or undefined"),
                row("param_undefined_isRejected", in -> in.params.set(2, new Tensor()),
                        "params[2] is null or undefined"),
                row("param_1d_isRejected", in -> in.params.set(2, torch.randn(5)),
                        "Muon only supports 2-D parameters; params[2] has shape [5]"),
                row("param_3d_byDefault_isRejectedWithHint", in -> in.params.set(2, torch.randn(4, 6, 5)),
                        "Muon only supports 2-D parameters; params[2] has shape [4, 6, 5]. To treat a 3-D "
                                + "parameter as a batch of 4 matrices, use "
                                + "MuonConfig.withStackedWeights(StackedWeights.BATCH)"),
                row("param_integer_isRejected", in -> in.params.set(2, torch.ones(4, 3).to(ScalarType.Long)),
                        "Muon only supports floating-point parameters; params[2] has dtype Long"),
                row("param_twice_isRejected", in -> in.params.set(2, in.params.get(0)),
                        "params[2] shares memory with params[0]; each is updated in place, so none may overlap "
                                + "another"),
                row("grad_shape_isRejected", in -> in.grads.set(2, torch.randn(3, 4)),
                        "grads[2] has shape [3, 4] but params[2] has shape [4, 3]; a gradient must have its "
                                + "parameter's shape"),
                row("grad_dtype_isRejected", in -> in.grads.set(2, torch.randn(4, 3).to(ScalarType.Double)),
                        "grads[2] has dtype Double but params[2] has dtype Float; a gradient must have its "
                                + "parameter's dtype"),
                row("grad_device_isRejected", in -> in.grads.set(2, onMeta(4, 3)),
                        "grads[2] is on meta but params[2] is on cpu; a gradient must be on its parameter's device"),
                row("buffer_device_isRejected", in -> in.buffers.set(2, onMeta(4, 3)),
                        "momentumBuffers[2] is on meta but params[2] is on cpu; a momentum buffer must be on its "
                                + "parameter's device"),
                row("grad_complex_isUnsupported", UnsupportedOperationException.class,
                        in -> in.grads.set(2, torch.randn(4, 3).to(ScalarType.ComplexFloat)),
                        "Muon does not support complex gradients; grads[2] has dtype ComplexFloat"),
                row("grad_sparse_isUnsupported", UnsupportedOperationException.class,
                        in -> in.grads.set(2, torch.randn(4, 3).to_sparse()),
                        "Muon supports dense (strided) gradients only; grads[2] has layout Sparse"),
                row("buffer_null_isRejected", in -> in.buffers.set(2, null),
                        "momentumBuffers[2] is null or undefined; every parameter needs its momentum buffer, zeros "
                                + "before its first update"),
                row("buffer_undefined_isRejected", in -> in.buffers.set(2, new Tensor()),
                        "momentumBuffers[2] is null or undefined; every parameter needs its momentum buffer, zeros "
                                + "before its first update"),
                row("buffer_shape_isRejected", in -> in.buffers.set(2, torch.zeros(12)),
                        "momentumBuffers[2] has shape [12] but params[2] has shape [4, 3]; a momentum buffer must "
                                + "have its parameter's shape"),
                row("buffer_dtype_isRejected", in -> in.buffers.set(2, torch.zeros(4, 3).to(ScalarType.BFloat16)),
                        "momentumBuffers[2] has dtype BFloat16 but params[2] has dtype Float; a momentum buffer "
                                + "must have its parameter's dtype"),
                row("buffer_notContiguous_isRejected", in -> in.buffers.set(2, torch.zeros(3, 4).t()),
                        "momentumBuffers[2] must be contiguous, as Muon's own buffer is; it has strides [1, 4]"),
                row("buffer_isItsParameter_isRejected", in -> in.buffers.set(2, in.params.get(2)),
                        "momentumBuffers[2] shares memory with params[2]; each is updated in place, so none may "
                                + "overlap another"),
                row("buffer_sharedByTwo_isRejected", in -> in.buffers.set(2, in.buffers.get(0)),
                        "momentumBuffers[2] shares memory with momentumBuffers[0]; each is updated in place, so "
                                + "none may overlap another"));
    }

    /** A tensor on the meta device: another device than the CPU's, on any machine. */
    private static Tensor onMeta(long... shape) {
        return torch.empty(shape, new TensorOptions().device(new DeviceOptional(new Device("meta"))), null);
    }

    private static Arguments row(String name, Consumer<Inputs> spoil, String message) {
        return row(name, IllegalArgumentException.class, spoil, message);
    }

    private static Arguments row(String name, Class<? extends RuntimeException> type, Consumer<Inputs> spoil,
                                 String message) {
        return Arguments.of(name, type, spoil, message);
    }

    /** Each bad input is the last parameter's, so a call that wrote before checking all would change the first. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void badInput_isRefusedWithMessage_andChangesNothing(String name, Class<? extends RuntimeException> type,
                                                          Consumer<Inputs> spoil, String message) {
        torch.manual_seed(11);
        Inputs in = new Inputs();
        spoil.accept(in);
        List<Tensor> before = copies(in.params, in.buffers);
        RuntimeException e = assertThrows(type, () -> MuonUpdate.apply(in.params, in.grads, in.buffers, in.config));
        assertEquals(message, e.getMessage());
        List<Tensor> after = copies(in.params, in.buffers);
        for (int i = 0; i < before.size(); i++) {
            Tensor b = before.get(i);
            assertTrue(b == null ? after.get(i) == null : after.get(i) != null && bitsEqual(b, after.get(i)),
                    name + ": tensor " + i + " changed");
        }
    }

    /** Copies of the tensors of the lists that hold values, null for the others (undefined, on meta), in order. */
    private static List<Tensor> copies(List<Tensor> params, List<Tensor> buffers) {
        List<Tensor> out = new ArrayList<>();
        Stream.concat(params.stream(), buffers.stream())
                .forEach(t -> out.add(t == null || !t.defined() || t.is_meta() ? null : t.clone()));
        return out;
    }

    private static void assertBitsEqual(Tensor expected, Tensor actual, String what) {
        assertTrue(bitsEqual(expected, actual), what + " differs");
    }

    /** Same shape, dtype and bits (a -0.0 is not a 0.0). */
    private static boolean bitsEqual(Tensor a, Tensor b) {
        if (a.scalar_type().value != b.scalar_type().value || !Arrays.equals(a.shape(), b.shape())) {
            return false;
        }
        ScalarType bits = switch ((int) a.element_size()) {
            case 2 -> ScalarType.Short;
            case 4 -> ScalarType.Int;
            case 8 -> ScalarType.Long;
            default -> throw new IllegalArgumentException("element size " + a.element_size());
        };
        return a.contiguous().view(bits).equal(b.contiguous().view(bits));
    }
}
