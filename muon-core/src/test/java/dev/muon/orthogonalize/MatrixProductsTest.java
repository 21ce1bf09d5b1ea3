package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MatrixProducts}: widened bfloat16 products are the float32 product of the same (exactly widened) operands,
 * rounded once, for 2-D and batched operands, strided views, an operand used twice and empty shapes; they stay
 * within bfloat16 rounding of libtorch's bfloat16 GEMM; and the widening is chosen exactly where the native kernels
 * run their AVX2 variant.
 */
@ExtendWith(NativeScopePerTest.class)
class MatrixProductsTest {
    @BeforeEach
    void seed() {
        torch.manual_seed(11);
    }

    /** A case: the two operands, made from bfloat16 tensors, and the shape of their product. */
    private record Case(String name, Tensor a, Tensor b) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Arguments> cases() {
        torch.manual_seed(11);
        Tensor x = bf16(7, 300);
        Tensor s = bf16(9, 9);
        Tensor batch = bf16(3, 4, 6);
        return Stream.of(
                new Case("7x5 by 5x9", bf16(7, 5), bf16(5, 9)),
                new Case("x by its transpose (a strided view)", x, x.t()),
                new Case("one operand twice", s, s),
                new Case("batch of 3, 4x6 by 6x4", batch, batch.mT()),
                new Case("0 rows", bf16(0, 5), bf16(5, 3)),
                new Case("empty inner dimension", bf16(4, 0), bf16(0, 3)),
                new Case("a narrowed block", x.narrow(0, 2, 3), x.t().narrow(1, 1, 4)))
                .map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void widened_isTheFloat32ProductRoundedOnce(Case c) {
        Tensor out = garbageLike(c.a, c.b);
        MatrixProducts.widening().multiply(out, c.a, c.b);

        Tensor expected = product(c.a.to(ScalarType.Float), c.b.to(ScalarType.Float)).to(ScalarType.BFloat16);
        assertEquals(ScalarType.BFloat16.value, out.scalar_type().value, "the destination keeps its dtype");
        assertTrue(torch.equal(out, expected), c + ": not the float32 product rounded once to bfloat16");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void widened_agreesWithLibtorchsBfloat16GemmToItsRounding(Case c) {
        Tensor widened = garbageLike(c.a, c.b);
        MatrixProducts.widening().multiply(widened, c.a, c.b);
        Tensor direct = garbageLike(c.a, c.b);
        MatrixProducts.LIBTORCH.multiply(direct, c.a, c.b);

        // Both accumulate in float32 and round once; only the order of the sums may differ: one bfloat16 ulp
        // (2^-7 relative to the entry, 2^-8 below it) at most, plus float32 noise around zero.
        Tensor exact = product(c.a.to(ScalarType.Double), c.b.to(ScalarType.Double));
        Tensor bound = exact.abs().mul(new Scalar(Math.scalb(1.0, -7))).add(new Scalar(1e-6));
        Tensor difference = widened.to(ScalarType.Double).sub(direct.to(ScalarType.Double)).abs();
        assertTrue(difference.le(bound).all().item_bool(), () -> c + ": widened and libtorch's products differ by "
                + "more than one bfloat16 rounding: " + difference.max().item_double());
    }

    @Test
    void widened_growsItsScratch_andReusesIt() {
        MatrixProducts products = MatrixProducts.widening();
        UnaryOperator<Tensor> check = a -> {
            Tensor b = bf16(a.size(1), 5);
            Tensor out = garbageLike(a, b);
            products.multiply(out, a, b);
            Tensor expected = product(a.to(ScalarType.Float), b.to(ScalarType.Float)).to(ScalarType.BFloat16);
            assertTrue(torch.equal(out, expected), a.size(0) + "x" + a.size(1) + " after another size");
            return out;
        };
        check.apply(bf16(3, 4));
        check.apply(bf16(40, 64)); // larger: every scratch slot grows
        check.apply(bf16(2, 3)); // smaller: a view on the grown scratch
        check.apply(bf16(40, 64));
    }

    @Test
    void libtorchProducts_andOtherDtypes_areLibtorchsGemm() {
        Tensor a = torch.randn(6, 7);
        Tensor b = torch.randn(7, 3);
        Tensor widened = torch.empty(6, 3);
        MatrixProducts.widening().multiply(widened, a, b);
        assertTrue(torch.equal(widened, product(a, b)), "float32 operands are multiplied as they are");
        assertFalse(MatrixProducts.LIBTORCH.widens());
        assertTrue(MatrixProducts.widening().widens());
    }

    @Test
    void forTensorsLike_widensBfloat16OnTheCpu_exactlyWhereTheAvx2VariantRuns() {
        boolean avx2 = NativeKernels.variant().filter(v -> v == NativeKernels.Variant.AVX2).isPresent();
        assertEquals(avx2, MatrixProducts.forTensorsLike(bf16(2, 2)).widens(),
                "bfloat16 widens where the AVX2 variant runs, variant " + NativeKernels.variant());
        assertFalse(MatrixProducts.forTensorsLike(torch.randn(2, 2)).widens(), "float32 never widens");
        assertFalse(MatrixProducts.forTensorsLike(torch.randn(2, 2).to(ScalarType.Double)).widens(),
                "float64 never widens");
    }

    private static Tensor bf16(long... shape) {
        return torch.randn(shape).to(ScalarType.BFloat16);
    }

    private static Tensor product(Tensor a, Tensor b) {
        return a.dim() == 3 ? torch.bmm(a, b) : torch.mm(a, b);
    }

    /** A destination full of garbage, as a reused workspace is: every entry must be overwritten. */
    private static Tensor garbageLike(Tensor a, Tensor b) {
        long[] shape = a.dim() == 3 ? new long[]{a.size(0), a.size(1), b.size(2)} : new long[]{a.size(0), b.size(1)};
        return torch.full(shape, new Scalar(1e3)).to(a.scalar_type());
    }
}
