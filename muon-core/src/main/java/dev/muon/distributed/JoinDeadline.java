package dev.muon.distributed;

import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.TCPStore;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * The part of {@link DistributedGroup#join} that waits for other ranks, done here against one deadline so that
 * every failure to form a group is reported within the timeout, saying what was waited for.
 *
 * <p>Why not leave the waiting to c10d: its waits overshoot. A TCPStore client that finds no server retries with
 * back-offs that run past its timeout (a 4 s timeout failed after 9.3 s), a store wait took 5 s for 4, and Gloo,
 * given the whole timeout for its full-mesh connect after the store's own wait had used part of it, made a rank
 * started late fail after 17–22 s for 10. A rank claiming another world size waited for ranks that never come
 * (51 s with a 10 s timeout). So: rank 0's port is probed from Java until it accepts; every rank registers its
 * world size in the store and polls, without blocking, for every other rank's registration, comparing world sizes
 * as they arrive; and what c10d still waits for after that (the store connection and Gloo's full mesh, both quick
 * once every rank is known to be there) gets only the time left.
 */
final class JoinDeadline {
    /** How often the store is asked who has arrived: rare enough to cost nothing, often enough to be on time. */
    private static final long POLL_MILLIS = 20;
    /** The least time a native step is given: a zero or negative timeout means "none" to c10d. */
    private static final long MIN_NATIVE_MILLIS = 1;

    private final GroupConfig config;
    private final long start;
    private final long deadline;

    JoinDeadline(GroupConfig config) {
        this.config = config;
        this.start = System.nanoTime();
        this.deadline = start + config.timeout().toNanos();
    }

    /** When the join began, for the "after N ms" of messages. */
    long start() {
        return start;
    }

    /** The time left before the deadline, at least {@link #MIN_NATIVE_MILLIS}: what a native step may wait. */
    Milliseconds remaining() {
        return new Milliseconds(Math.max(MIN_NATIVE_MILLIS, millisLeft()));
    }

    /**
     * On a rank other than 0: waits until rank 0's store accepts TCP connections, so that the store client (whose
     * own retries overshoot) connects at once.
     *
     * @throws IllegalStateException at the deadline, naming the address
     */
    void awaitStore() {
        InetSocketAddress address = new InetSocketAddress(config.masterAddr(), config.masterPort());
        IOException last = null;
        while (true) {
            long left = millisLeft();
            if (left <= 0) {
                throw new IllegalStateException(failure("connecting to rank 0's rendezvous store at "
                        + config.masterAddr() + ":" + config.masterPort(), "waited for rank 0 to accept connections "
                        + "there: rank 0 was not started, started late or has failed, or the address is wrong"
                        + (last == null ? "" : " (last attempt: " + last + ")")));
            }
            try (Socket socket = new Socket()) {
                socket.connect(address, (int) Math.min(left, 1_000));
                return;
            } catch (IOException e) {
                last = e;
            }
            sleep(Math.min(POLL_MILLIS, left));
        }
    }

    /**
     * Registers this rank in the store, then waits until every rank of the world has registered, failing at once
     * if one registered another world size.
     *
     * @throws IllegalStateException on a mismatch, or at the deadline naming the ranks that never came
     */
    void awaitRanks(TCPStore store, String step) {
        // claims[r]: the world size rank r registered, 0 while it has not. add() is the store's one call that
        // neither blocks nor allocates a value, and add(key, 0) reads. Two processes claiming one rank add up to
        // a size nobody claimed, which the mismatch message covers.
        long[] claims = new long[config.worldSize()];
        if (config.rank() != 0) {
            // Rank 0 registers as soon as its store is up. Read its claim before registering: rank 0 sees a
            // mismatch only once we have registered, and it closes the store as it fails; having read first, this
            // rank fails with the same news rather than with a closed connection.
            await(store, step, claims, 1, false);
        }
        store.add(worldKey(config.rank()), config.worldSize());
        await(store, step, claims, claims.length, true);
    }

    /** Polls until ranks {@code [0, upTo)} have registered, comparing their world sizes if {@code check}. */
    private void await(TCPStore store, String step, long[] claims, int upTo, boolean check) {
        while (true) {
            List<Integer> missing = new ArrayList<>();
            for (int r = 0; r < upTo; r++) {
                if (claims[r] == 0) {
                    claims[r] = registeredWorld(store, r, claims, step);
                }
                if (check && claims[r] != 0 && claims[r] != config.worldSize()) {
                    throw new IllegalStateException(failure(step, "rank " + r + " registered a world size of "
                            + claims[r] + ", this rank has " + config.worldSize() + ": every rank must be given "
                            + "the same WORLD_SIZE, and every process its own RANK"));
                }
                if (claims[r] == 0) {
                    missing.add(r);
                }
            }
            if (missing.isEmpty()) {
                return;
            }
            long left = millisLeft();
            if (left <= 0) {
                throw new IllegalStateException(failure(step, "waited for rank(s) " + missing + " of "
                        + config.worldSize() + " to reach the rendezvous store at " + config.masterAddr() + ":"
                        + config.masterPort() + ": they were not started, started late, have failed, or cannot "
                        + "reach that address"));
            }
            sleep(Math.min(POLL_MILLIS, left));
        }
    }

    /**
     * The world size rank {@code r} registered, 0 if none yet. The store lives in rank 0's process: when rank 0
     * gives up first (its deadline comes a moment before ours) or dies, say whom we were waiting for.
     */
    private long registeredWorld(TCPStore store, int r, long[] claims, String step) {
        try {
            return store.add(worldKey(r), 0);
        } catch (RuntimeException e) {
            List<Integer> missing = new ArrayList<>();
            for (int i = 0; i < claims.length; i++) {
                if (claims[i] == 0 && i != config.rank()) {
                    missing.add(i);
                }
            }
            String message = String.valueOf(e.getMessage());
            int nl = message.indexOf('\n');
            throw new IllegalStateException(failure(step, "rank 0's rendezvous store at " + config.masterAddr() + ":"
                    + config.masterPort() + " closed (rank 0 gave up or failed) while this rank waited for rank(s) "
                    + missing + " of " + config.worldSize() + "; c10d said: "
                    + (nl < 0 ? message : message.substring(0, nl))), e);
        }
    }

    /** Milliseconds to the deadline, rounded up: 0 only once it has passed, so that nobody gives up early. */
    private long millisLeft() {
        long nanos = deadline - System.nanoTime();
        return nanos <= 0 ? 0 : (nanos + 999_999) / 1_000_000;
    }

    /** The message of a failed join step: the same head as a failed collective's, then what went wrong. */
    String failure(String step, String reason) {
        long waited = (System.nanoTime() - start) / 1_000_000;
        return step + " failed on rank " + config.rank() + " of " + config.worldSize() + " after " + waited
                + " ms (timeout " + config.timeout().toMillis() + " ms): " + reason;
    }

    private static String worldKey(int rank) {
        return "muon/join/" + rank + "/worldSize";
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while joining the group", e);
        }
    }
}
