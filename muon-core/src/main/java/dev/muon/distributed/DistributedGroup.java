package dev.muon.distributed;

import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.javacpp.SizeTPointer;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.AllreduceOptions;
import org.bytedeco.pytorch.Backend;
import org.bytedeco.pytorch.BarrierOptions;
import org.bytedeco.pytorch.BroadcastOptions;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.GlooDeviceVector;
import org.bytedeco.pytorch.ProcessGroupGloo;
import org.bytedeco.pytorch.ReduceOp;
import org.bytedeco.pytorch.TCPStore;
import org.bytedeco.pytorch.TCPStoreOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.Work;
import org.bytedeco.pytorch.global.torch;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One process's membership of a c10d process group: the rendezvous store ({@code TCPStore}, hosted by rank 0) and
 * the backend ({@code ProcessGroupGloo} on CPU, {@code ProcessGroupNCCL} on CUDA), with the few collectives the
 * sharded optimizers use.
 *
 * <p>Every collective waits at most the group's timeout. When a peer dies, stalls or leaves, the call throws an
 * {@link IllegalStateException} that names the operation, this rank, the time waited and the timeout, within that
 * timeout (a dead peer's closed connection is usually seen at once). The group is unusable after such a failure:
 * later calls throw at once, and the usual recovery is to restart every process and resume from a checkpoint.
 *
 * <p>After {@link #close()}, every operation of the group (its collectives, {@link #rank()}, {@link #worldSize()}
 * and {@link #device()}) throws an {@link IllegalStateException} saying that the group is closed, before it
 * touches anything; so does every optimizer call that uses the group ({@code step}, {@code save}, {@code load}).
 * {@link #config()} and {@link #payloadBytes()} stay readable, for logs.
 *
 * <pre>{@code
 * try (DistributedGroup group = DistributedGroup.join(GroupConfig.fromEnvironment())) {
 *     MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
 *             .distributed(group, ShardingConfig.defaults()).build();
 *     ...
 * }
 * }</pre>
 *
 * <p>Not thread-safe: collectives must be issued in the same order on every rank.
 */
public final class DistributedGroup implements AutoCloseable {
    /** The fingerprint hash a rank sends in an agreement when its own part failed. */
    private static final long AGREEMENT_FAILED = 0;
    private static final String CAUSES = "a rank died, stalled or is unreachable. c10d said: ";

    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    private final GroupConfig config;
    private final TCPStore store;
    private final Backend backend;
    private final Device device;
    private long payloadBytes;
    private String failure;
    private boolean closed;

    private DistributedGroup(GroupConfig config, TCPStore store, Backend backend, Device device) {
        this.config = config;
        this.store = store;
        this.backend = backend;
        this.device = device;
    }

    /**
     * Joins the group described by {@code config}: rank 0 starts the store, every rank connects to it and
     * registers its world size, and once every rank has, the backend connects every pair of ranks. Returns once
     * all {@code worldSize} ranks have joined. Every failure is reported within the timeout plus 1 s.
     *
     * @param config where to meet and who this process is
     * @return this process's membership
     * @throws IllegalStateException         if the group does not form within the timeout (a rank is missing or
     *                                       late, the port is taken, the address is wrong), naming the step and
     *                                       what was waited for; at once if a rank registered another world size
     * @throws UnsupportedOperationException if NCCL is asked for without CUDA or the {@code -gpu} natives
     */
    public static DistributedGroup join(GroupConfig config) {
        Objects.requireNonNull(config, "config must not be null");
        if (config.backend() == CollectiveBackend.NCCL) {
            String missing = NcclAvailability.unavailabilityCause();
            if (missing != null) {
                throw new UnsupportedOperationException("the NCCL backend is not available in this process: "
                        + missing + ". Use CollectiveBackend.GLOO for CPU tensors.");
            }
        }
        // Loading libtorch (seconds on first use, more on a busy machine) is not waiting for a rank: it must not
        // eat the timeout, or the first join of a process could fail without having waited for anyone.
        Loader.load(TCPStore.class);
        if (config.backend() == CollectiveBackend.GLOO) {
            Loader.load(ProcessGroupGloo.class);
        }
        JoinDeadline deadline = new JoinDeadline(config);
        String storeStep = config.rank() == 0
                ? "starting the rendezvous store on port " + config.masterPort()
                : "connecting to rank 0's rendezvous store at " + config.masterAddr() + ":" + config.masterPort();
        if (config.rank() != 0) {
            deadline.awaitStore();
        }
        TCPStore store;
        try (PointerScope scope = new PointerScope()) {
            TCPStoreOptions options = new TCPStoreOptions();
            options.port((short) config.masterPort()).isServer(config.rank() == 0).waitWorkers(false)
                    .timeout(deadline.remaining());
            options.numWorkers(new SizeTPointer(1).put(config.worldSize()));
            store = new TCPStore(config.masterAddr(), options);
            store.retainReference();
        } catch (RuntimeException e) {
            throw new IllegalStateException(deadline.failure(storeStep, CAUSES + Messages.firstLine(e)), e);
        }
        String groupStep = "forming the " + config.backend() + " process group (every rank connects to every other)";
        try (PointerScope scope = new PointerScope()) {
            deadline.awaitRanks(store, groupStep);
            Backend backend;
            Device device;
            if (config.backend() == CollectiveBackend.GLOO) {
                // Every rank is known to be there: the full-mesh connect is quick, and gets only the time left.
                ProcessGroupGloo.Options options = ProcessGroupGloo.Options.create(deadline.remaining());
                // Bind to the rendezvous address's interface: the default (the host name's address) may not
                // route between processes on 127.0.0.1, and never is the one the user named.
                options.devices(new GlooDeviceVector(ProcessGroupGloo.createDeviceForHostname(
                        config.masterAddr().equals("localhost") ? "127.0.0.1" : localAddressFor(config))));
                ProcessGroupGloo gloo = new ProcessGroupGloo(store, config.rank(), config.worldSize(), options);
                // The group's own timeout bounds the collectives that take no timeout option (coalesced
                // all-reduce, send, receive): give them the whole of it again.
                gloo.setTimeout(new Milliseconds(config.timeout().toMillis()));
                backend = gloo;
                device = new Device(torch.DeviceType.CPU);
            } else {
                backend = NcclAvailability.newProcessGroup(store, config);
                // One GPU per process, as torchrun lays them out (LOCAL_RANK = rank on a single machine).
                device = new Device(torch.DeviceType.CUDA, (byte) (config.rank() % torch.cuda_device_count()));
            }
            store.setTimeout(new Milliseconds(config.timeout().toMillis()));
            backend.retainReference();
            device.retainReference();
            return new DistributedGroup(config, store, backend, device);
        } catch (RuntimeException e) {
            store.releaseReference();
            // Ours already say what was waited for; c10d's errors arrive as plain RuntimeExceptions.
            if (e instanceof IllegalStateException || e instanceof UnsupportedOperationException) {
                throw e;
            }
            throw new IllegalStateException(deadline.failure(groupStep, CAUSES + Messages.firstLine(e)), e);
        }
    }

    /**
     * The address this rank's backend listens on. On one machine that is the rendezvous address; across machines
     * each rank must listen on an address the others can reach, which {@code GLOO_SOCKET_IFNAME}-style variables
     * choose in PyTorch: here {@code MUON_GLOO_HOST} does, and otherwise the host name's address is used.
     */
    private static String localAddressFor(GroupConfig config) {
        String host = System.getenv("MUON_GLOO_HOST");
        if (host != null && !host.isBlank()) {
            return host.trim();
        }
        String addr = config.masterAddr();
        return addr.startsWith("127.") ? addr : hostName();
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            return "127.0.0.1";
        }
    }

    /**
     * This process's rank.
     *
     * @return the rank, {@code 0 <= rank < worldSize}
     * @throws IllegalStateException if the group is closed
     */
    public int rank() {
        requireOpen("rank()");
        return config.rank();
    }

    /**
     * The number of processes in the group.
     *
     * @return the world size
     * @throws IllegalStateException if the group is closed
     */
    public int worldSize() {
        requireOpen("worldSize()");
        return config.worldSize();
    }

    /**
     * The settings the group was joined with.
     *
     * @return the config
     */
    public GroupConfig config() {
        return config;
    }

    /**
     * The device the group's tensors must live on: CPU for Gloo, the current CUDA device for NCCL.
     *
     * @return the device
     * @throws IllegalStateException if the group is closed
     */
    public Device device() {
        requireOpen("device()");
        return device;
    }

    /**
     * The payload this rank has handed to or received from collectives since it joined, in bytes: the size of
     * every tensor sent, received, broadcast or all-reduced. The wire carries more for an all-reduce (a ring sends
     * about {@code 2(W−1)/W} times the payload); see {@code docs/distributed.md}.
     *
     * @return bytes
     */
    public long payloadBytes() {
        return payloadBytes;
    }

    /**
     * Sums {@code tensor} elementwise over all ranks, in place.
     *
     * @param tensor a dense contiguous tensor on {@link #device()}, of the same shape and dtype on every rank
     * @param what   what is being reduced, for the error message
     * @throws IllegalArgumentException if {@code tensor} is undefined, sparse or not contiguous
     * @throws IllegalStateException    if the group is closed, a peer fails or the timeout passes
     */
    public void allReduceSum(Tensor tensor, String what) {
        requireOpen("all-reduce of " + what);
        checkTensor("tensor", tensor, "all-reduce of " + what);
        allReduce(tensor, ReduceOp.RedOpType.SUM, what);
    }

    /** Reduces {@code tensor} in place over all ranks with {@code op}; the group is open. */
    private void allReduce(Tensor tensor, ReduceOp.RedOpType op, String what) {
        run("all-reduce of " + what, tensor, vector -> {
            AllreduceOptions options = new AllreduceOptions();
            options.reduceOp(new ReduceOp(op));
            options.timeout(timeoutMillis());
            return backend.allreduce(vector, options);
        });
    }

    /**
     * Sums each of {@code tensors} elementwise over all ranks, in place, in one coalesced call.
     *
     * @param tensors dense contiguous tensors of one dtype on {@link #device()}, the same list of shapes on every
     *                rank
     * @param what    what is being reduced, for the error message
     * @throws IllegalArgumentException if the tensors are not all of one dtype, or one is undefined, sparse or not
     *                                  contiguous
     * @throws IllegalStateException    if the group is closed, a peer fails or the timeout passes
     */
    public void allReduceSum(List<Tensor> tensors, String what) {
        requireOpen("all-reduce of " + what);
        if (tensors.isEmpty()) {
            return;
        }
        for (int i = 0; i < tensors.size(); i++) {
            checkTensor("tensors[" + i + "]", tensors.get(i), "all-reduce of " + what);
        }
        byte dtype = tensors.get(0).scalar_type().value;
        long bytes = 0;
        for (Tensor t : tensors) {
            if (t.scalar_type().value != dtype) {
                throw new IllegalArgumentException("tensors must share one dtype for a coalesced all-reduce of "
                        + what + ", got " + tensors.get(0).scalar_type() + " and " + t.scalar_type());
            }
            bytes += t.numel() * t.element_size();
        }
        try (PointerScope scope = new PointerScope()) {
            // The bindings cannot construct AllreduceCoalescedOptions; the default is SUM, and the group's own
            // timeout (set when it was created) bounds the call.
            runAll("all-reduce of " + what, new TensorVector(tensors.toArray(new Tensor[0])), bytes,
                    backend::allreduce_coalesced);
        }
    }

    /**
     * Copies {@code tensor} from rank {@code root} to every other rank, in place.
     *
     * @param tensor a dense contiguous tensor on {@link #device()}, of the same shape and dtype on every rank
     * @param root   the rank whose values are sent
     * @param what   what is being sent, for the error message
     * @throws IllegalArgumentException if {@code root} is not a rank of the group, or {@code tensor} is undefined,
     *                                  sparse or not contiguous
     * @throws IllegalStateException    if the group is closed, a peer fails or the timeout passes
     */
    public void broadcast(Tensor tensor, int root, String what) {
        requireOpen("broadcast of " + what + " from rank " + root);
        checkRank("root", root);
        checkTensor("tensor", tensor, "broadcast of " + what);
        run("broadcast of " + what + " from rank " + root, tensor, vector -> {
            BroadcastOptions options = new BroadcastOptions();
            options.rootRank(root);
            options.timeout(timeoutMillis());
            return backend.broadcast(vector, options);
        });
    }

    /**
     * Sends {@code tensor} to one rank, which must {@link #receive} it with the same tag.
     *
     * @param tensor a dense contiguous tensor on {@link #device()}
     * @param to     the receiving rank
     * @param tag    matches this send to its receive
     * @param what   what is being sent, for the error message
     * @throws IllegalArgumentException if {@code to} is not another rank of the group, or {@code tensor} is
     *                                  undefined, sparse or not contiguous
     * @throws IllegalStateException    if the group is closed, the peer fails or the timeout passes
     */
    public void send(Tensor tensor, int to, int tag, String what) {
        requireOpen("send of " + what + " to rank " + to);
        checkPeer("to", to);
        checkTensor("tensor", tensor, "send of " + what);
        run("send of " + what + " to rank " + to, tensor, vector -> backend.send(vector, to, tag));
    }

    /**
     * Receives into {@code tensor} what rank {@code from} {@link #send sends} with the same tag.
     *
     * @param tensor a dense contiguous tensor on {@link #device()} of the sent shape and dtype
     * @param from   the sending rank
     * @param tag    matches this receive to its send
     * @param what   what is being received, for the error message
     * @throws IllegalArgumentException if {@code from} is not another rank of the group, or {@code tensor} is
     *                                  undefined, sparse or not contiguous
     * @throws IllegalStateException    if the group is closed, the peer fails or the timeout passes
     */
    public void receive(Tensor tensor, int from, int tag, String what) {
        requireOpen("receive of " + what + " from rank " + from);
        checkPeer("from", from);
        checkTensor("tensor", tensor, "receive of " + what);
        run("receive of " + what + " from rank " + from, tensor, vector -> backend.recv(vector, from, tag));
    }

    /**
     * Sums {@code values} elementwise over all ranks: the small integer exchanges (masks, flags, fingerprints) that
     * keep the ranks in step.
     *
     * @param values this rank's values, the same length on every rank
     * @param what   what is being summed, for the error message
     * @return the sums, a new array
     * @throws IllegalStateException if the group is closed, a peer fails or the timeout passes
     */
    public long[] allReduceSum(long[] values, String what) {
        // Before the tensor is made: a closed group's device is already freed (that was the old NPE).
        requireOpen("all-reduce of " + what);
        return allReduceSmall(values.length, () -> Tensor.create(values), torch.ScalarType.Long,
                ReduceOp.RedOpType.SUM, what, new long[values.length], (sums, out) -> sums.data_ptr_long().get(out));
    }

    /**
     * The elementwise maximum of {@code values} over all ranks, in float64: the small exchanges in which ranks
     * must agree on a largest observation (QK-Clip's per-head logits). {@code -Infinity} is the neutral value.
     *
     * @param values this rank's values, the same length on every rank
     * @param what   what is being reduced, for the error message
     * @return the maxima, a new array
     * @throws IllegalStateException if the group is closed, a peer fails or the timeout passes
     */
    public double[] allReduceMax(double[] values, String what) {
        requireOpen("all-reduce of " + what);
        return allReduceSmall(values.length, () -> Tensor.create(values), torch.ScalarType.Double,
                ReduceOp.RedOpType.MAX, what, new double[values.length],
                (maxima, out) -> maxima.data_ptr_double().get(out));
    }

    /**
     * The all-reduce of a small host array, {@link #allReduceSum(long[], String)}'s and
     * {@link #allReduceMax(double[], String)}'s: {@code values} made a tensor of {@code dtype} on the device,
     * reduced with {@code op}, and read back on the host into {@code out}; nothing at all for no values. The group
     * is open.
     *
     * @param length the number of values
     * @param values makes them a tensor, inside this call's {@code PointerScope}
     * @param out    the array the result is read into, of {@code length} elements
     * @param read   reads the reduced host tensor into {@code out}
     * @return {@code out}
     */
    private <A> A allReduceSmall(int length, Supplier<Tensor> values, torch.ScalarType dtype, ReduceOp.RedOpType op,
                                 String what, A out, BiConsumer<Tensor, A> read) {
        if (length == 0) {
            return out;
        }
        try (PointerScope scope = new PointerScope()) {
            Tensor reduced = values.get().to(device, dtype);
            allReduce(reduced, op, what);
            read.accept(reduced.cpu().contiguous(), out);
            return out;
        }
    }

    /**
     * Every rank's {@code value}, in rank order: one all-reduce of a one-hot vector.
     *
     * @param value this rank's value
     * @param what  what is being exchanged, for the error message
     * @return the values, index = rank
     * @throws IllegalStateException if the group is closed, a peer fails or the timeout passes
     */
    public long[] allGather(long value, String what) {
        requireOpen("all-gather of " + what);
        long[] slots = new long[worldSize()];
        slots[rank()] = value;
        return allReduceSum(slots, what);
    }

    /**
     * Makes every rank agree before any of them goes on: each rank builds its part, then all ranks exchange a hash
     * of a fingerprint of what they built (or a failure mark), so that a mismatch or a local error is an error on
     * every rank at once instead of a hang in a later collective, and no rank goes on alone.
     *
     * @param what        what is being built, for messages
     * @param build       builds this rank's part; may throw
     * @param fingerprint the text every rank must agree on, made from what was built
     * @param <T>         the built type
     * @return what this rank built
     * @throws RuntimeException      this rank's own failure, after the others have been told
     * @throws IllegalStateException if another rank failed or the fingerprints differ
     */
    public <T> T agree(String what, Supplier<T> build, Function<T, String> fingerprint) {
        T built = null;
        RuntimeException failure = null;
        long mine;
        try {
            built = build.get();
            mine = agreementHash(fingerprint.apply(built));
        } catch (RuntimeException e) {
            failure = e;
            mine = AGREEMENT_FAILED;
        }
        long[] all = allGather(mine, "fingerprints of " + what);
        if (failure != null) {
            throw failure;
        }
        List<Integer> failed = new ArrayList<>();
        List<Integer> differ = new ArrayList<>();
        for (int r = 0; r < all.length; r++) {
            if (all[r] == AGREEMENT_FAILED) {
                failed.add(r);
            } else if (all[r] != mine) {
                differ.add(r);
            }
        }
        if (!failed.isEmpty()) {
            throw new IllegalStateException(what + ": rank(s) " + failed + " failed (see their error), so rank "
                    + rank() + " stops too and has changed nothing");
        }
        if (!differ.isEmpty()) {
            throw new IllegalStateException(what + " differ across ranks: rank " + rank() + " has fingerprint "
                    + Long.toHexString(mine) + ", rank(s) " + differ + " have another (all: " + agreementHex(all)
                    + "); every rank must have the same");
        }
        return built;
    }

    private static long agreementHash(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            long h = 0;
            for (int i = 0; i < 8; i++) {
                h = (h << 8) | (digest[i] & 0xff);
            }
            return h == AGREEMENT_FAILED ? 1 : h;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    private static String agreementHex(long[] values) {
        String[] out = new String[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Long.toHexString(values[i]);
        }
        return Arrays.toString(out);
    }

    /**
     * Waits until every rank has reached this call.
     *
     * @param what the point being synchronized, for the error message
     * @throws IllegalStateException if the group is closed, a peer fails or the timeout passes
     */
    public void barrier(String what) {
        requireOpen("barrier at " + what);
        run("barrier at " + what, null, vector -> {
            BarrierOptions options = new BarrierOptions();
            options.timeout(timeoutMillis());
            return backend.barrier(options);
        });
    }

    private void run(String operation, Tensor tensor, Function<TensorVector, Work> start) {
        long bytes = tensor == null ? 0 : tensor.numel() * tensor.element_size();
        try (PointerScope scope = new PointerScope()) {
            runAll(operation, tensor == null ? new TensorVector() : new TensorVector(tensor), bytes, start);
        }
    }

    private void runAll(String operation, TensorVector vector, long bytes, Function<TensorVector, Work> start) {
        requireOpen(operation);
        if (failure != null) {
            throw new IllegalStateException(operation + " refused on rank " + rank() + ": this group failed "
                    + "earlier (" + failure + "); restart every rank and resume from a checkpoint");
        }
        long begin = System.nanoTime();
        try (PointerScope scope = new PointerScope()) {
            Work work = start.apply(vector);
            work._wait(timeoutMillis());
        } catch (RuntimeException e) {
            failure = operation;
            throw new IllegalStateException(describe(config, operation, begin) + Messages.firstLine(e), e);
        }
        payloadBytes += bytes;
    }

    /**
     * The first thing every operation does: after {@link #close()} the store, backend and device are freed, and
     * touching them would fail with a {@code NullPointerException} from the bindings, or worse.
     */
    private void requireOpen(String operation) {
        if (closed) {
            throw new IllegalStateException(operation + " on a closed DistributedGroup");
        }
    }

    private Milliseconds timeoutMillis() {
        return new Milliseconds(config.timeout().toMillis());
    }

    private static String describe(GroupConfig config, String operation, long begin) {
        long waited = (System.nanoTime() - begin) / 1_000_000;
        return operation + " failed on rank " + config.rank() + " of " + config.worldSize() + " after " + waited
                + " ms (timeout " + config.timeout().toMillis() + " ms): " + CAUSES;
    }

    private void checkRank(String name, int value) {
        if (value < 0 || value >= worldSize()) {
            throw new IllegalArgumentException(name + " must be a rank in [0, " + worldSize() + "), got " + value);
        }
    }

    /**
     * Refuses, before the collective and without failing the group, a tensor the backend cannot take: a caller's
     * slip on this rank is not a peer's failure.
     */
    private void checkTensor(String name, Tensor tensor, String what) {
        java.util.Objects.requireNonNull(tensor, name + " must not be null");
        if (!tensor.defined()) {
            throw new IllegalArgumentException(name + " of the " + what + " must be a defined tensor, got an undefined "
                    + "one");
        }
        if (tensor.is_sparse()) {
            throw new IllegalArgumentException(name + " of the " + what + " must be dense, got a sparse tensor");
        }
        if (!tensor.is_contiguous()) {
            throw new IllegalArgumentException(name + " of the " + what + " must be contiguous, got shape "
                    + java.util.Arrays.toString(tensor.shape()) + " with strides "
                    + java.util.Arrays.toString(tensor.strides().vec().get()));
        }
    }

    private void checkPeer(String name, int value) {
        checkRank(name, value);
        if (value == rank()) {
            throw new IllegalArgumentException(name + " must be another rank than this one (" + rank()
                    + "), got " + value);
        }
    }


    /**
     * Leaves the group and frees its native resources. Every operation after this throws an
     * {@link IllegalStateException} ("... on a closed DistributedGroup"). Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            backend.shutdown();
        } catch (RuntimeException ignored) {
            // a failed group may not shut down cleanly; its resources are released below either way
        }
        backend.releaseReference();
        store.releaseReference();
        device.releaseReference();
    }
}
