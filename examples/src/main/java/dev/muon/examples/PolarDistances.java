package dev.muon.examples;

import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.SvdPolarFactor;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * How far Newton–Schulz lands from the exact polar factor on one matrix, for {@link OrthogonalityTable}: the
 * matrix goes through each {@link Iteration} (plain Newton–Schulz with five and four of Keller Jordan's steps, and
 * AOL with four, {@link MuonConfig#withAol()}), in float32 and in bfloat16, and each output {@code O} is compared
 * with {@code U Vᵀ} from {@link SvdPolarFactor} (float64).
 *
 * <p>The singular values of {@code O} are read over the rank of the input only, the directions the polar factor
 * keeps (those above {@code max(rows, cols)·2⁻⁵²·σ₁}, {@link SvdPolarFactor}'s rule): a ReLU unit that is dead for
 * a whole batch gives an exact zero row, which the polar factor and Newton–Schulz both send to zero, and which
 * would otherwise show as a minimum of 0 that says nothing about the iteration.
 */
final class PolarDistances {
    /** The three iterations compared, each in both working precisions. */
    enum Iteration {
        /** PyTorch's default: Frobenius normalization, Keller Jordan's triple, five steps. */
        PLAIN_5("plain 5"),
        /** The same with one step fewer: what AOL's four steps cost without AOL. */
        PLAIN_4("plain 4"),
        /** Turbo-Muon: AOL preconditioning, four steps of {@code turboMuon4()}. */
        AOL_4("AOL 4");

        private final String label;

        Iteration(String label) {
            this.label = label;
        }

        /** The name the tables print. */
        String label() {
            return label;
        }

        /** The iteration's settings at a working precision, through the public config types only. */
        NewtonSchulzConfig config(NsPrecision precision) {
            NewtonSchulzConfig plain = NewtonSchulzConfig.defaults().withNsPrecision(precision);
            return switch (this) {
                case PLAIN_5 -> plain;
                case PLAIN_4 -> plain.withNsSteps(4);
                case AOL_4 -> of(MuonConfig.defaults().withAol().withNsPrecision(precision));
            };
        }
    }

    /**
     * One iteration at one precision.
     *
     * @param iteration the iteration
     * @param precision its working precision
     */
    record Setting(Iteration iteration, NsPrecision precision) {
        /** The label of a table's column or row, such as {@code AOL 4 bf16}. */
        String label() {
            return iteration.label() + (precision == NsPrecision.BFLOAT16 ? " bf16" : " f32");
        }
    }

    /** Every setting, float32 first, in the order the tables print them. */
    static final List<Setting> SETTINGS = settings();

    /**
     * One setting's result on one matrix.
     *
     * @param distance    {@code ‖O − U Vᵀ‖_F / ‖U Vᵀ‖_F}
     * @param sigmaMin    the smallest singular value of {@code O} over the input's rank
     * @param sigmaMedian their median
     * @param sigmaMax    the largest
     * @param shareAboveHalf the share of them at 0.5 or more: the directions the iteration brought near 1 (the
     *                    distance mixes these with the ones it could not reach)
     */
    record Result(double distance, double sigmaMin, double sigmaMedian, double sigmaMax, double shareAboveHalf) {
    }

    /**
     * One matrix's spectrum and results.
     *
     * @param rank                 the input's rank (singular values the polar factor keeps)
     * @param spectralOverFrobenius {@code σ₁ / ‖U‖_F}: how far below 1 Frobenius normalization leaves the top
     *                             singular value (1 for rank one, {@code 1/√rank} for a flat spectrum)
     * @param smallestOverLargest  {@code σ_rank / σ₁} of the input: what the iteration has to lift to 1
     * @param results              one per {@link #SETTINGS}, in that order
     */
    record Matrix(int rank, double spectralOverFrobenius, double smallestOverLargest, List<Result> results) {
    }

    private final List<NewtonSchulz> iterations = new ArrayList<>();
    private final SvdPolarFactor polar = new SvdPolarFactor();

    /** One {@link NewtonSchulz} per setting, kept so that each reuses its workspaces from matrix to matrix. */
    PolarDistances() {
        for (Setting s : SETTINGS) {
            iterations.add(new NewtonSchulz(s.iteration().config(s.precision())));
        }
    }

    /**
     * Measures every setting on one matrix.
     *
     * @param update a 2-D float32 matrix, such as the Newton–Schulz input of a Muon parameter
     * @return its spectrum and the results
     * @throws IllegalArgumentException if the matrix is zero: it has no polar factor to measure against
     */
    Matrix measure(Tensor update) {
        try (PointerScope scope = new PointerScope()) {
            Tensor u = update.to(ScalarType.Double);
            double[] inputSigmas = values(torch.linalg_svdvals(u));
            int rank = rank(inputSigmas, u.size(0), u.size(1));
            if (rank == 0) {
                throw new IllegalArgumentException("the matrix is zero: it has no polar factor to measure against");
            }
            Tensor exact = polar.orthogonalize(update);
            List<Result> results = new ArrayList<>();
            for (NewtonSchulz ns : iterations) {
                // The iteration's output lives in its workspace until the next call: copied out at once.
                results.add(compare(ns.orthogonalize(update).to(ScalarType.Double).clone(), exact, rank));
            }
            double frobenius = torch.linalg_vector_norm(u).item_double();
            return new Matrix(rank, inputSigmas[0] / frobenius, inputSigmas[Math.max(rank - 1, 0)] / inputSigmas[0],
                    List.copyOf(results));
        }
    }

    /**
     * The distance of {@code o} to the exact polar factor and {@code o}'s singular values over {@code rank}.
     *
     * @param o     the output, float64
     * @param exact {@code U Vᵀ}, float64
     * @param rank  how many of {@code o}'s singular values to read, the largest first
     * @return the result
     */
    static Result compare(Tensor o, Tensor exact, int rank) {
        try (PointerScope scope = new PointerScope()) {
            double distance = torch.linalg_vector_norm(o.sub(exact)).item_double()
                    / torch.linalg_vector_norm(exact).item_double();
            double[] sigmas = Arrays.copyOf(values(torch.linalg_svdvals(o)), rank);
            Arrays.sort(sigmas);
            long aboveHalf = Arrays.stream(sigmas).filter(x -> x >= 0.5).count();
            return new Result(distance, sigmas[0], median(sigmas), sigmas[rank - 1], (double) aboveHalf / rank);
        }
    }

    /** The number of singular values (descending) above {@link SvdPolarFactor}'s cut-off. */
    static int rank(double[] descending, long rows, long cols) {
        double cutoff = descending[0] * Math.max(rows, cols) * Math.ulp(1.0);
        int rank = 0;
        while (rank < descending.length && descending[rank] > cutoff) {
            rank++;
        }
        return rank;
    }

    /**
     * The median of sorted values.
     *
     * @param sorted ascending, at least one
     * @return the middle value, or the mean of the two middle ones
     */
    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** A tensor's values as doubles, in row-major order. */
    static double[] values(Tensor t) {
        Tensor d = t.to(ScalarType.Double).contiguous();
        double[] out = new double[(int) d.numel()];
        new DoublePointer(d.data_ptr()).get(out);
        return out;
    }

    /** The Newton–Schulz settings of a Muon config. */
    static NewtonSchulzConfig of(MuonConfig c) {
        return new NewtonSchulzConfig(c.nsCoefficients(), c.nsSteps(), c.eps(), c.nsPrecision(), c.nsAlgorithm(),
                c.nsPreconditioning());
    }

    private static List<Setting> settings() {
        List<Setting> all = new ArrayList<>();
        for (NsPrecision precision : List.of(NsPrecision.FLOAT32, NsPrecision.BFLOAT16)) {
            for (Iteration iteration : Iteration.values()) {
                all.add(new Setting(iteration, precision));
            }
        }
        return List.copyOf(all);
    }
}
