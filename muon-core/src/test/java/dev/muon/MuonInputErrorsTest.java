package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static dev.muon.ErrorRows.assertRejected;
import static dev.muon.ErrorRows.row;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every rejected input of {@link Muon}: at build time, at {@code step()}, and in the accessors. */
@ExtendWith(NativeScopePerTest.class)
class MuonInputErrorsTest {
    static Tensor matrix(long rows, long cols) {
        return torch.randn(rows, cols).requires_grad_(true);
    }

    static Stream<Arguments> invalidParameters() {
        return Stream.of(
                row("params_empty_isRejected", () -> Muon.of(List.of(), MuonConfig.defaults()),
                        "params must not be empty: group 0 has none"),
                row("groups_none_isRejected", () -> Muon.builder().build(),
                        "params must not be empty: add at least one group"),
                row("param_1d_isRejected", () -> Muon.of(List.of(matrix(3, 4), torch.randn(64)),
                        MuonConfig.defaults()),
                        "Muon only supports 2-D parameters; parameter 1 of group 0 has shape [64]"),
                row("param_0d_isRejected", () -> Muon.of(List.of(torch.randn(new long[0])), MuonConfig.defaults()),
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape []"),
                row("param_4d_byDefault_isRejectedWithHint",
                        () -> Muon.of(List.of(torch.randn(8, 3, 3, 3)), MuonConfig.defaults()),
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape [8, 3, 3, 3]. "
                                + "To flatten a 4-D conv filter to [8, 27], use "
                                + "MuonConfig.withConvWeights(ConvWeights.FLATTEN)"),
                row("param_3d_byDefault_isRejectedWithHint",
                        () -> Muon.of(List.of(torch.randn(4, 6, 5)), MuonConfig.defaults()),
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape [4, 6, 5]. "
                                + "To treat a 3-D parameter as a batch of 4 matrices, use "
                                + "MuonConfig.withStackedWeights(StackedWeights.BATCH)"),
                row("param_5d_isRejected", () -> Muon.of(List.of(torch.randn(2, 2, 2, 2, 2)),
                        MuonConfig.defaults().withConvWeights(ConvWeights.FLATTEN)),
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape [2, 2, 2, 2, 2]"),
                row("param_duplicate_isRejected", () -> {
                    Tensor w = matrix(3, 4);
                    return Muon.of(List.of(w, matrix(2, 2), new Tensor(w)), MuonConfig.defaults());
                }, "duplicate parameter: parameter 2 of group 0 is the same tensor as parameter 0 of group 0"),
                row("param_duplicateAcrossGroups_isRejected", () -> {
                    Tensor w = matrix(3, 4);
                    return Muon.builder().addGroup(List.of(w), MuonConfig.defaults())
                            .addGroup(List.of(w), MuonConfig.defaults()).build();
                }, "duplicate parameter: parameter 0 of group 1 is the same tensor as parameter 0 of group 0"),
                row("param_integer_isRejected", () -> Muon.of(List.of(torch.ones(3, 3).to(ScalarType.Long)), MuonConfig.defaults()),
                        "Muon only supports floating-point parameters; parameter 0 of group 0 has dtype Long"),
                row("param_complex_isRejected", () -> Muon.of(List.of(torch.ones(3, 3).to(ScalarType.ComplexFloat)), MuonConfig.defaults()),
                        "Muon does not support complex parameters; parameter 0 of group 0 has dtype ComplexFloat"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidParameters")
    void invalidParameter_isRejectedWithMessage(String name, Supplier<Object> build, String message) {
        assertRejected(build, message);
    }

    @Test
    void step_sparseGradient_isRejectedAndChangesNothing() {
        Tensor a = matrix(4, 3);
        Tensor b = matrix(3, 5);
        Muon muon = Muon.of(List.of(a, b), MuonConfig.defaults());
        a.mutable_grad().put(torch.randn(4, 3));
        b.mutable_grad().put(torch.randn(3, 5));
        muon.step();
        double[] aBefore = Tensors.values(a);
        double[] bBefore = Tensors.values(b);
        double[] bufferBefore = Tensors.values(muon.momentumBuffer(a).orElseThrow());

        a.mutable_grad().put(torch.randn(4, 3));
        b.mutable_grad().put(torch.randn(3, 5).to_sparse());
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, muon::step);

        assertEquals("Muon does not support sparse gradients; parameter 1 of group 0 has a sparse gradient",
                e.getMessage());
        assertArrayEquals(aBefore, Tensors.values(a));
        assertArrayEquals(bBefore, Tensors.values(b));
        assertArrayEquals(bufferBefore, Tensors.values(muon.momentumBuffer(a).orElseThrow()));
    }

    @Test
    void step_gradientOfWrongShape_isRejectedAndChangesNothing() {
        Tensor a = matrix(4, 3);
        Muon muon = Muon.of(List.of(a), MuonConfig.defaults());
        double[] before = Tensors.values(a);
        a.mutable_grad().put(torch.randn(3, 4));
        IllegalStateException e = assertThrows(IllegalStateException.class, muon::step);
        assertEquals("the gradient of parameter 0 of group 0 has shape [3, 4] but the parameter has shape [4, 3]",
                e.getMessage());
        assertArrayEquals(before, Tensors.values(a));
        assertTrue(muon.momentumBuffer(a).isEmpty());
    }

    @Test
    void setLr_negative_isRejectedAndKeepsTheOldLr() {
        Muon muon = Muon.of(List.of(matrix(3, 3)), MuonConfig.defaults().withLr(0.02));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> muon.setLr(0, -1.0));
        assertEquals("lr must be >= 0, got -1.0", e.getMessage());
        assertEquals(0.02, muon.lr(0));
    }

    @Test
    void groupIndex_outOfRange_isRejected() {
        Muon muon = Muon.of(List.of(matrix(3, 3)), MuonConfig.defaults());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> muon.lr(1));
        assertEquals("group must be in [0, 1), got 1", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> muon.setLr(-1, 0.1));
    }

    @Test
    void momentumBuffer_ofForeignTensor_isRejected() {
        Muon muon = Muon.of(List.of(matrix(3, 3)), MuonConfig.defaults());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> muon.momentumBuffer(torch.randn(2, 2)));
        assertEquals("param is not a parameter of this optimizer (shape [2, 2])", e.getMessage());
    }

    /** A null or undefined handle is named as such, never an error from libtorch about an undefined tensor. */
    @Test
    void aNullOrUndefinedParam_isRefusedByName() {
        Tensor p = matrix(3, 3);
        Muon muon = Muon.of(List.of(p), MuonConfig.defaults());
        assertEquals("param must not be null",
                assertThrows(NullPointerException.class, () -> muon.momentumBuffer(null)).getMessage());
        assertEquals("param must be a defined tensor, got an undefined one",
                assertThrows(IllegalArgumentException.class, () -> muon.secondMoment(new Tensor())).getMessage());
        assertEquals("param must be a defined tensor, got an undefined one",
                assertThrows(IllegalArgumentException.class, () -> Muon.builder()
                        .addGroup(List.of(p), MuonConfig.defaults())
                        .rowSplit(new Tensor(), RowSplit.splitRows(1, 2))).getMessage());
    }
}
