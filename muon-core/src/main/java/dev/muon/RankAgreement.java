package dev.muon;

import dev.muon.distributed.DistributedGroup;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Makes every rank of a group agree before it goes on: each rank builds its part locally, then all ranks exchange
 * a fingerprint of what they built (or a failure mark), so that a mismatch or a local error becomes an error on
 * every rank at once instead of a hang in the first collective of the first step.
 */
final class RankAgreement {
    private static final long FAILED = 0;

    private RankAgreement() {
    }

    /**
     * Runs {@code build} and checks that every rank's fingerprint of the result is the same.
     *
     * @param group       the group
     * @param what        what is being built, for messages
     * @param build       builds the local object
     * @param fingerprint the text every rank must agree on, made from the built object
     * @param <T>         the built type
     * @return the object built
     * @throws RuntimeException      this rank's own failure, after the others have been told
     * @throws IllegalStateException if another rank failed or the fingerprints differ
     */
    static <T> T agree(DistributedGroup group, String what, Supplier<T> build,
                       Function<T, String> fingerprint) {
        T built = null;
        RuntimeException failure = null;
        long mine;
        try {
            built = build.get();
            mine = hash(fingerprint.apply(built));
        } catch (RuntimeException e) {
            failure = e;
            mine = FAILED;
        }
        long[] all = group.allGather(mine, "fingerprints of " + what);
        if (failure != null) {
            throw failure;
        }
        List<Integer> failed = new ArrayList<>();
        List<Integer> differ = new ArrayList<>();
        for (int r = 0; r < all.length; r++) {
            if (all[r] == FAILED) {
                failed.add(r);
            } else if (all[r] != mine) {
                differ.add(r);
            }
        }
        if (!failed.isEmpty()) {
            throw new IllegalStateException(what + ": rank(s) " + failed + " failed (see their error), so rank "
                    + group.rank() + " stops too and has changed nothing");
        }
        if (!differ.isEmpty()) {
            throw new IllegalStateException(what + " differ across ranks: rank " + group.rank() + " has fingerprint "
                    + Long.toHexString(mine) + ", rank(s) " + differ + " have another (all: " + hex(all) + "). "
                    + "Every rank must build it from the same model and settings: the same parameter names, "
                    + "shapes, dtypes, assignment and hyperparameters");
        }
        return built;
    }

    private static long hash(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            long h = 0;
            for (int i = 0; i < 8; i++) {
                h = (h << 8) | (digest[i] & 0xff);
            }
            return h == FAILED ? 1 : h;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    private static String hex(long[] values) {
        String[] out = new String[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Long.toHexString(values[i]);
        }
        return Arrays.toString(out);
    }
}
