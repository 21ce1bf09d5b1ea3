package dev.muon;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The buffers of accelerator parameters in pinned host memory ({@link StateStorage.Place#HOST_MEMORY}): each
 * parameter's are copied to the device for its update and back after it, through {@link DeviceTransfers}; with
 * read-ahead the next parameter's copy in runs on a transfer stream while this one's Newton–Schulz runs.
 *
 * <p>On the device only the buffers in flight are held (this unit's and the next one's), in tensors kept for reuse
 * across parameters of the same shape. The host buffers are allocated pinned at a buffer's first store, so that the
 * copies are asynchronous; the host reads or writes one only after waiting for the copies in flight.
 */
final class HostMemoryHome implements StateHome {
    /** One buffer this process keeps. */
    private static final class Entry {
        final KeptBuffers.Buffer buffer;
        /** The stored buffer in host memory, or null: none stored. */
        Tensor host;

        Entry(KeptBuffers.Buffer buffer) {
            this.buffer = buffer;
        }
    }

    /** A parameter's copy in flight: its device tensors, one per stored entry, and the marker to wait for. */
    private record InFlight(List<Entry> entries, Tensor[] device, DeviceTransfers.Marker marker) {
    }

    private final StateStorage storage;
    private final DeviceTransfers transfers;
    /** Whether host buffers are pinned: not for a CPU standing in for the device (tests). */
    private final boolean pinned;
    private final KeptBuffers<Entry> entries;
    /**
     * A restore's values, put in force at commit: the value itself where a host tensor exists (copied into it), else
     * a new host tensor already holding it.
     */
    private final StagedWrites<Entry, Tensor> staged;
    private final Map<ParameterState, InFlight> prefetched = new HashMap<>();
    /** The device tensors of the buffers in flight: this unit's and the next one's. */
    private final WorkingBuffers working;
    private boolean closed;

    private HostMemoryHome(StateStorage storage, DeviceTransfers transfers, boolean pinned,
                           KeptBuffers<Entry> entries) {
        this.storage = storage;
        this.transfers = transfers;
        this.pinned = pinned;
        this.entries = entries;
        this.staged = new StagedWrites<>(entries);
        this.working = new WorkingBuffers(entries.states().isEmpty()
                ? new org.bytedeco.pytorch.Device(torch.DeviceType.CPU)
                : entries.states().iterator().next().param.device());
        entries.states().forEach(state -> state.lendFrom(spec -> {
            Entry entry = entries.find(state, spec);
            if (entry == null) {
                return null;
            }
            // The update writes it (zeros) on the compute stream: after any copy out still reading it.
            transfers.computeWaitsForTransfers();
            return take(entry);
        }));
    }

    /**
     * The home of the buffers each parameter keeps.
     *
     * @param storage   the group's storage ({@link StateStorage.Place#HOST_MEMORY})
     * @param kept      per parameter, the declared buffers this process keeps, in order
     * @param transfers how buffers move ({@link DeviceTransfers#of})
     * @param pinned    whether host buffers are pinned (false only for a CPU standing in for the device)
     * @return the home
     * @throws IllegalArgumentException if pinned host memory cannot be allocated in this process, naming why
     */
    static HostMemoryHome open(StateStorage storage, Map<ParameterState, List<BufferSpec>> kept,
                               DeviceTransfers transfers, boolean pinned) {
        if (pinned) {
            try {
                // One small pinned tensor: refused here, before anything changed, rather than at the first step.
                torch.empty(new long[]{1}, new TensorOptions(torch.ScalarType.Float)
                        .pinned_memory(new BoolOptional(true)), null).close();
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(storage.setting() + " needs pinned host memory, which this "
                        + "process cannot allocate (" + e.getMessage() + ")", e);
            }
        }
        return new HostMemoryHome(storage, transfers, pinned, new KeptBuffers<>(kept, Entry::new, e -> e.buffer));
    }

    @Override
    public void checkBeforeStep() {
        requireOpen();
    }

    @Override
    public void prefetch(ParameterState state) {
        if (storage.readAhead() && !prefetched.containsKey(state)) {
            InFlight copy = copyIn(state);
            if (copy != null) {
                prefetched.put(state, copy);
            }
        }
    }

    @Override
    public void bringIn(ParameterState state, boolean beforeChanges) {
        requireOpen();
        InFlight copy = prefetched.remove(state);
        if (copy == null) {
            copy = copyIn(state);
        }
        if (copy == null) {
            return;
        }
        transfers.computeWaitsFor(copy.marker);
        for (int i = 0; i < copy.entries.size(); i++) {
            state.install(copy.entries.get(i).buffer.spec(), copy.device[i]);
        }
    }

    /** Starts the copy in of a parameter's stored buffers, or returns null when none is stored. */
    private InFlight copyIn(ParameterState state) {
        List<Entry> stored = new ArrayList<>();
        for (Entry entry : entries.of(state)) {
            if (entry.host != null) {
                stored.add(entry);
            }
        }
        if (stored.isEmpty()) {
            return null;
        }
        Tensor[] device = new Tensor[stored.size()];
        Tensor[] host = new Tensor[stored.size()];
        for (int i = 0; i < device.length; i++) {
            device[i] = take(stored.get(i));
            host[i] = stored.get(i).host;
        }
        return new InFlight(stored, device, transfers.copyIn(device, host));
    }

    @Override
    public void sendBack(ParameterState state) {
        List<Tensor> host = new ArrayList<>();
        List<Tensor> device = new ArrayList<>();
        List<Entry> sent = new ArrayList<>();
        for (Entry entry : entries.of(state)) {
            Tensor resident = state.evict(entry.buffer.spec());
            if (resident == null) {
                continue;
            }
            if (entry.host == null) {
                entry.host = newHost(entry);
            }
            host.add(entry.host);
            device.add(resident);
            sent.add(entry);
        }
        if (device.isEmpty()) {
            return;
        }
        transfers.copyOut(host.toArray(new Tensor[0]), device.toArray(new Tensor[0]));
        // Lent again for a later copy in, which the transfer stream runs after this copy out; a buffer its update
        // created at its first use is freed once the copy out has read it.
        for (Tensor t : device) {
            if (!working.giveBack(t)) {
                transfers.retire(t);
            }
        }
    }

    @Override
    public void abandon(ParameterState state) {
        InFlight copy = prefetched.remove(state);
        List<Tensor> resident = new ArrayList<>();
        for (Entry entry : entries.of(state)) {
            Tensor t = state.evict(entry.buffer.spec());
            if (t != null) {
                resident.add(t);
            }
        }
        if (copy == null && resident.isEmpty()) {
            return;
        }
        // The device tensors may still be written by the failed update's queued work or by the copy: every stream
        // is waited for before they are lent again.
        transfers.settle();
        if (copy != null) {
            for (Tensor t : copy.device) {
                working.giveBack(t);
            }
        }
        for (Tensor t : resident) {
            if (!working.giveBack(t)) {
                t.close();
            }
        }
    }

    @Override
    public Tensor read(ParameterState state, BufferSpec spec) {
        requireOpen();
        Entry entry = entries.find(state, spec);
        if (entry == null || entry.host == null) {
            return null;
        }
        transfers.hostWaits();
        return NativeLifetime.outliveScope(entry.host.to(state.param.device(), entry.buffer.dtype(), false, true,
                new org.bytedeco.pytorch.MemoryFormatOptional()));
    }

    @Override
    public void write(ParameterState state, BufferSpec spec, Tensor value) {
        requireOpen();
        staged.write(state, spec, entry -> {
            transfers.hostWaits();
            // Where nothing is stored yet, the host tensor is made now, so that committing cannot fail.
            return entry.host != null ? value : newHost(entry).copy_(value);
        });
    }

    @Override
    public void drop(ParameterState state, BufferSpec spec) {
        staged.drop(state, spec);
    }

    @Override
    public void commitWrites() {
        transfers.hostWaits();
        staged.commit((entry, value) -> {
            if (entry.host != null) {
                entry.host.copy_(value);
            } else {
                entry.host = value;
            }
        }, entry -> entry.host = null);
    }

    @Override
    public void discardWrites() {
        staged.discard();
    }

    @Override
    public long storedBytes(ParameterState state) {
        return entries.heldBytes(state, entry -> entry.host != null);
    }

    @Override
    public long workingBytes() {
        return working.bytes();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        transfers.settle();
        prefetched.clear();
        working.close();
        for (Entry entry : entries.all()) {
            if (entry.host != null) {
                entry.host.close();
                entry.host = null;
            }
        }
        transfers.close();
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException(storage.setting() + ": the host buffers were freed by close(); a closed "
                    + "optimizer keeps no state");
        }
    }

    /** A new host tensor for an entry: pinned, so that copies to and from the device are asynchronous. */
    private Tensor newHost(Entry entry) {
        TensorOptions options = new TensorOptions(entry.buffer.dtype());
        if (pinned) {
            options = options.pinned_memory(new BoolOptional(true));
        }
        return NativeLifetime.outliveScope(torch.empty(entry.buffer.shape(), options, null));
    }

    /** A device tensor of the entry's shape and dtype in working memory. */
    private Tensor take(Entry entry) {
        return working.take(entry.buffer.shape(), entry.buffer.dtype(), entry.buffer.bytes());
    }
}
