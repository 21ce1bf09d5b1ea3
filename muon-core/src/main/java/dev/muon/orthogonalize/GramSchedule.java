package dev.muon.orthogonalize;

/**
 * The order of the Gram Newton–Schulz iteration's products ({@link GramIteration} has the algebra and the restart
 * rule), for any kind of matrix: libtorch's tensors ({@link GramIteration}, {@link BlasKernels}) and direct buffers
 * ({@link BufferNewtonSchulz}, muon-djl's) run this one schedule, so the two give the same bits from the same
 * products.
 *
 * @param <M> a matrix: what the products read and write
 */
final class GramSchedule {
    /** Steps between restarts (a restart happens before step k for every k = 3, 6, ... below the step count). */
    static final int RESTART_EVERY = 3;

    private GramSchedule() {
    }

    /** The products one Gram iteration needs. */
    interface Products<M> {
        /** {@code out = x·xᵀ}, both triangles. */
        void gram(M out, M x);

        /** {@code z = a·I + b·r + c·r²} with step {@code k}'s coefficients, both triangles; may use scratch. */
        void polynomial(M z, M r, int k, M scratch);

        /**
         * {@code out = s·b} for a symmetric {@code s} that commutes with {@code b} (both are polynomials in one Gram
         * matrix, so the product is symmetric in exact arithmetic).
         */
        void symmetricTimes(M out, M s, M b);

        /** {@code out = z²·r} for the symmetric, commuting {@code z} and {@code r}; may use {@code scratch}. */
        void squareTimes(M out, M z, M r, M scratch);

        /** {@code out = q·x} for the {@code m × m} {@code q} and the {@code m × n} {@code x}. */
        void times(M out, M q, M x);
    }

    /**
     * The iteration's buffers, all distinct: two of the input's wide {@code m × n} shape and six {@code m × m}.
     *
     * @param x       holds the normalised wide input on entry
     * @param y       the other wide buffer
     * @param squares six {@code m × m} buffers
     */
    record Buffers<M>(M x, M y, M[] squares) {
        Buffers {
            if (squares.length != 6) {
                throw new IllegalArgumentException("the Gram iteration needs 6 square buffers, got " + squares.length);
            }
        }
    }

    /**
     * Runs the iteration on {@code buffers.x()}, which holds the normalised wide input, and returns the wide buffer
     * that holds the result ({@code x} or {@code y}).
     */
    static <M> M run(Products<M> p, int steps, Buffers<M> buffers) {
        return run(p, steps, buffers, null);
    }

    /**
     * {@link #run(Products, int, Buffers)} with a preconditioning of the first Gram matrix and the input: called as
     * {@code precondition.accept(R_0, X_r)} right after {@code R_0 = X_r·X_rᵀ}, before the first polynomial, it may
     * rescale both in place (AOL: {@code X_r ← diag(s)·X_r}, {@code R_0 ← diag(s)·R_0·diag(s)}), which keeps
     * {@code R_0 = X_r·X_rᵀ}.
     *
     * @param precondition the preconditioning, or null for none
     */
    static <M> M run(Products<M> p, int steps, Buffers<M> buffers, java.util.function.BiConsumer<M, M> precondition) {
        M x = buffers.x();
        M y = buffers.y();
        M source = x;
        M rk = buffers.squares()[0];
        M rSpare = buffers.squares()[1];
        M zk = buffers.squares()[2];
        M scratch = buffers.squares()[3];
        M qk = buffers.squares()[4];
        M qSpare = buffers.squares()[5];
        p.gram(rk, source);
        if (precondition != null) {
            precondition.accept(rk, source);
        }
        boolean qIsIdentity = true;
        for (int k = 0; k < steps; k++) {
            if (k > 0 && k % RESTART_EVERY == 0) {
                // Materialise X_k = Q_k·X_r and start again from its exact Gram matrix.
                M target = source == x ? y : x;
                p.times(target, qk, source);
                source = target;
                p.gram(rk, source);
                qIsIdentity = true;
            }
            p.polynomial(zk, rk, k, scratch);
            M zCurrent = zk;
            if (qIsIdentity) {
                // Q_{k+1} = Z_k: hand Z's buffer over to Q instead of copying it.
                zk = qk;
                qk = zCurrent;
                qIsIdentity = false;
            } else {
                p.symmetricTimes(qSpare, zCurrent, qk);
                M t = qk;
                qk = qSpare;
                qSpare = t;
            }
            boolean last = k == steps - 1;
            boolean restartsNext = (k + 1) % RESTART_EVERY == 0;
            if (!last && !restartsNext) {
                p.squareTimes(rSpare, zCurrent, rk, scratch);
                M t = rk;
                rk = rSpare;
                rSpare = t;
            }
        }
        M out = source == x ? y : x;
        p.times(out, qk, source);
        return out;
    }
}
