package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Every rejected {@link RowSplit}: at construction, and at the build of {@link Muon} and {@link MuonAdamW} where the
 * parameter is known. One row per bad input, each with its exception and exact message.
 */
@ExtendWith(NativeScopePerTest.class)
class RowSplitErrorsTest {
    /**
     * fc1.weight [6, 4] is the only matrix on Muon; embed.weight and fc1.bias are on AdamW
     * ({@link CheckpointTest#small}).
     */
    static Map<String, Tensor> small() {
        return CheckpointTest.small(torch.ScalarType.Float, 6);
    }

    static Tensor matrix(long rows, long cols) {
        return torch.randn(rows, cols).requires_grad_(true);
    }

    static Arguments row(String name, Class<? extends RuntimeException> type, Supplier<Object> call,
                         String message) {
        return Arguments.of(name, type, call, message);
    }

    static Stream<Arguments> invalidInputs() {
        Class<IllegalArgumentException> iae = IllegalArgumentException.class;
        return Stream.of(
                row("splitRows_noBlocks_isRejected", iae, RowSplit::splitRows,
                        "splitRows needs at least one block size, got none"),
                row("splitRows_zeroBlock_isRejected", iae, () -> RowSplit.splitRows(4, 0),
                        "splitRows block sizes must be > 0, got 0 at index 1 of [4, 0]"),
                row("splitRows_negativeBlock_isRejected", iae, () -> RowSplit.splitRows(-2, 4),
                        "splitRows block sizes must be > 0, got -2 at index 0 of [-2, 4]"),
                row("splitRows_null_isRejected", NullPointerException.class, () -> RowSplit.splitRows((int[]) null),
                        "blockRows must not be null"),
                row("perHead_zero_isRejected", iae, () -> RowSplit.perHead(0),
                        "perHead headDim must be > 0, got 0"),
                row("perHead_negative_isRejected", iae, () -> RowSplit.perHead(-16),
                        "perHead headDim must be > 0, got -16"),
                row("muonAdamW_splitRows_sumBelowRows_isRejected", iae,
                        () -> MuonAdamW.builder(small()).rowSplit("fc1.weight", RowSplit.splitRows(2, 2)).build(),
                        "parameter 'fc1.weight' has 6 rows, but the blocks of splitRows(2, 2) add up to 4; they "
                                + "must add up to the rows"),
                row("muonAdamW_splitRows_sumAboveRows_isRejected", iae,
                        () -> MuonAdamW.builder(small()).rowSplit("fc1.weight", RowSplit.splitRows(4, 4)).build(),
                        "parameter 'fc1.weight' has 6 rows, but the blocks of splitRows(4, 4) add up to 8; they "
                                + "must add up to the rows"),
                row("muonAdamW_perHead_notDividingRows_isRejected", iae,
                        () -> MuonAdamW.builder(small()).rowSplit("fc1.weight", RowSplit.perHead(4)).build(),
                        "parameter 'fc1.weight' has 6 rows, which perHead(4) cannot split: headDim must divide "
                                + "the rows"),
                row("muonAdamW_rowSplitWhen_notFitting_isRejected", iae,
                        () -> MuonAdamW.builder(small())
                                .rowSplitWhen((name, t) -> name.endsWith(".weight"), RowSplit.perHead(5)).build(),
                        "parameter 'fc1.weight' has 6 rows, which perHead(5) cannot split: headDim must divide "
                                + "the rows"),
                row("muonAdamW_rowSplit_unknownName_isRejected", iae,
                        () -> MuonAdamW.builder(small()).rowSplit("fc2.weight", RowSplit.perHead(2)).build(),
                        "rowSplit names 'fc2.weight', which is not a parameter; parameters are "
                                + "[embed.weight, fc1.weight, fc1.bias]"),
                row("muonAdamW_rowSplit_adamWName_isRejected", iae,
                        () -> MuonAdamW.builder(small()).rowSplit("embed.weight", RowSplit.perHead(2)).build(),
                        "rowSplit names 'embed.weight', which is on AdamW; only Muon parameters are "
                                + "orthogonalized"),
                row("muonAdamW_rowSplit_frozenName_isRejected", iae, () -> {
                    Map<String, Tensor> named = small();
                    named.put("frozen.weight", torch.randn(4, 4));
                    return MuonAdamW.builder(named).rowSplit("frozen.weight", RowSplit.perHead(2)).build();
                }, "rowSplit names 'frozen.weight', which does not require grad and is left out"),
                row("muonAdamW_rowSplit_twoRulesForOneName_isRejected", iae,
                        () -> MuonAdamW.builder(small()).rowSplit("fc1.weight", RowSplit.perHead(2))
                                .rowSplit("fc1.weight", RowSplit.splitRows(3, 3)).build(),
                        "rowSplit names 'fc1.weight' twice, with perHead(2) and splitRows(3, 3); give one rule per "
                                + "parameter"),
                row("muonAdamW_rowSplit_nullName_isRejected", NullPointerException.class,
                        () -> MuonAdamW.builder(small()).rowSplit((String) null, RowSplit.perHead(2)),
                        "name must not be null"),
                row("muonAdamW_rowSplit_nullSplit_isRejected", NullPointerException.class,
                        () -> MuonAdamW.builder(small()).rowSplit("fc1.weight", null),
                        "split must not be null"),
                row("muonAdamW_rowSplitWhen_nullRule_isRejected", NullPointerException.class,
                        () -> MuonAdamW.builder(small()).rowSplitWhen(null, RowSplit.perHead(2)),
                        "rule must not be null"),
                row("muon_splitRows_notFitting_isRejected", iae, () -> {
                    Tensor w = matrix(6, 4);
                    return Muon.builder().addGroup(List.of(w), MuonConfig.defaults())
                            .rowSplit(w, RowSplit.splitRows(3, 2)).build();
                }, "parameter 0 of group 0 has 6 rows, but the blocks of splitRows(3, 2) add up to 5; they must "
                        + "add up to the rows"),
                row("muon_rowSplitWhen_notFitting_isRejected", iae, () -> {
                    Tensor a = matrix(4, 4);
                    Tensor b = matrix(6, 4);
                    return Muon.builder().addGroup(List.of(a, b), MuonConfig.defaults())
                            .rowSplitWhen(t -> true, RowSplit.perHead(4)).build();
                }, "parameter 1 of group 0 has 6 rows, which perHead(4) cannot split: headDim must divide the rows"),
                row("muon_rowSplit_notAParameter_isRejected", iae, () -> {
                    Tensor w = matrix(6, 4);
                    return Muon.builder().addGroup(List.of(w), MuonConfig.defaults())
                            .rowSplit(matrix(3, 3), RowSplit.perHead(1)).build();
                }, "rowSplit names a tensor of shape [3, 3] that is not a parameter of this optimizer"),
                row("muon_rowSplit_twoRulesForOneTensor_isRejected", iae, () -> {
                    Tensor w = matrix(6, 4);
                    return Muon.builder().addGroup(List.of(w), MuonConfig.defaults())
                            .rowSplit(w, RowSplit.splitRows(3, 3)).rowSplit(w, RowSplit.perHead(2)).build();
                }, "rowSplit names the tensor of shape [6, 4] twice, with splitRows(3, 3) and perHead(2); give one "
                        + "rule per parameter"),
                row("muon_rowSplit_nonContiguousStack_isRejected", iae, () -> {
                    Tensor w = torch.randn(2, 4, 4).transpose(0, 1).requires_grad_(true);
                    return Muon.builder().addGroup(List.of(w),
                                    MuonConfig.defaults().withStackedWeights(StackedWeights.BATCH))
                            .rowSplit(w, RowSplit.perHead(2)).build();
                }, "parameter 0 of group 0 is a stack of matrices with row split perHead(2) and must be contiguous; it "
                        + "is not"),
                row("muon_rowSplit_nullTensor_isRejected", NullPointerException.class,
                        () -> Muon.builder().rowSplit((Tensor) null, RowSplit.perHead(2)),
                        "param must not be null"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidInputs")
    void invalidInput_isRejectedWithMessage(String name, Class<? extends RuntimeException> type,
                                            Supplier<Object> call, String message) {
        RuntimeException e = assertThrows(type, call::get);
        assertEquals(message, e.getMessage());
    }
}
