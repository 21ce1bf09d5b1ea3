package dev.muon;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceGuardImplInterface;
import org.bytedeco.pytorch.OptionalStreamGuard;
import org.bytedeco.pytorch.Stream;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * How a {@link HostMemoryHome} moves buffers between host memory and the device, and what waits for what. The
 * update runs on the device's current stream (the compute stream); with read-ahead the copies run on a transfer
 * stream of their own, so that the next parameter's copy in overlaps this one's Newton–Schulz:
 * <pre>
 *   copy in (transfer stream)   → marker; the compute stream waits for it before the parameter's update
 *   copy out                    the transfer stream waits for the compute stream's work so far, then copies
 *   host waits                  before the host reads or writes a host buffer (a checkpoint, a restore)
 * </pre>
 * A device tensor reused for the next copy in is written on the transfer stream after its copy out there, in stream
 * order. Device-generic (c10's {@code DeviceGuardImplInterface}: streams and events of any accelerator); on a CPU
 * (the tests' stand-in for a device) every copy is synchronous.
 */
interface DeviceTransfers {
    /** A point in a stream's work that another stream can wait for. */
    interface Marker {
    }

    /**
     * Starts copying host buffers into device buffers.
     *
     * @param device the device tensors
     * @param host   the host tensors, of the same shapes and dtypes
     * @return the marker the compute stream waits for
     */
    Marker copyIn(Tensor[] device, Tensor[] host);

    /**
     * Makes the compute stream's following work wait for a copy in.
     *
     * @param copies what {@link #copyIn} returned
     */
    void computeWaitsFor(Marker copies);

    /**
     * Makes the compute stream's following work wait for every copy issued so far (before it writes a device tensor
     * that a copy out may still read).
     */
    void computeWaitsForTransfers();

    /**
     * Copies device buffers into host buffers once the compute stream's work so far is done.
     *
     * @param host   the host tensors
     * @param device the device tensors
     */
    void copyOut(Tensor[] host, Tensor[] device);

    /** Waits on the host for every copy so far. */
    void hostWaits();

    /**
     * Frees a device tensor once the copies issued so far are done with it (a buffer created at its first use, copied
     * out).
     *
     * @param t the tensor
     */
    void retire(Tensor t);

    /** Waits on the host for every copy and all the compute stream's work so far (after a failure). */
    void settle();

    /** Frees what the transfers hold, after {@link #settle}. */
    void close();

    /**
     * Copies each source tensor into its destination, in order.
     *
     * @param to          the destinations
     * @param from        the sources, of the same shapes
     * @param nonBlocking whether a copy between host and device may run asynchronously to the host
     */
    static void copyAll(Tensor[] to, Tensor[] from, boolean nonBlocking) {
        for (int i = 0; i < to.length; i++) {
            to[i].copy_(from[i], nonBlocking);
        }
    }

    /**
     * The transfers for a device.
     *
     * @param device    the parameters' device
     * @param readAhead whether copies run on a transfer stream of their own (overlapped), or in the compute stream
     * @return the transfers
     */
    static DeviceTransfers of(Device device, boolean readAhead) {
        if (device.is_cpu()) {
            return synchronous();
        }
        return readAhead ? new SideStream(device) : new ComputeStream(device);
    }

    /**
     * Synchronous copies: a CPU standing in for the device (tests), where nothing runs ahead.
     *
     * @return the transfers: {@link ComputeStream} without a stream to wait for
     */
    static DeviceTransfers synchronous() {
        return new ComputeStream();
    }

    /**
     * Copies in the compute stream, in order with the update: no overlap (read-ahead off). On a device they are
     * asynchronous to the host, which waits for the stream; on a CPU standing in for the device ({@link #synchronous})
     * they are synchronous and nothing is left to wait for.
     */
    final class ComputeStream implements DeviceTransfers {
        private static final Marker IN_ORDER = new Marker() {
        };
        /** The device's streams, or null on a CPU standing in for the device: copies synchronous, nothing to wait. */
        private final DeviceGuardImplInterface impl;
        private final Device device;

        ComputeStream(Device device) {
            this.impl = torch.getDeviceGuardImpl(device.type());
            this.device = NativeLifetime.outliveScope(new Device(device.type(), device.index()));
        }

        /** On a CPU standing in for the device. */
        private ComputeStream() {
            this.impl = null;
            this.device = null;
        }

        @Override
        public Marker copyIn(Tensor[] deviceTensors, Tensor[] host) {
            copyAll(deviceTensors, host, impl != null);
            return IN_ORDER;
        }

        @Override
        public void computeWaitsFor(Marker copies) {
            // The copies are in the compute stream already.
        }

        @Override
        public void computeWaitsForTransfers() {
            // The copies are in the compute stream already.
        }

        @Override
        public void copyOut(Tensor[] host, Tensor[] deviceTensors) {
            copyAll(host, deviceTensors, impl != null);
        }

        @Override
        public void hostWaits() {
            if (impl != null) {
                impl.synchronizeStream(impl.getStream(device));
            }
        }

        @Override
        public void retire(Tensor t) {
            // The copies are in the stream it was made in: the allocator reuses its memory after them.
            t.close();
        }

        @Override
        public void settle() {
            hostWaits();
        }

        @Override
        public void close() {
        }
    }

    /** Copies on a transfer stream of their own, ordered against the compute stream by events. */
    final class SideStream implements DeviceTransfers {
        private final DeviceGuardImplInterface impl;
        private final Device device;
        private final Stream transfer;
        /** Events free to be recorded again (a wait already enqueued on one keeps the state it had then). */
        private final ArrayDeque<Event> free = new ArrayDeque<>();
        private final List<Event> all = new ArrayList<>();

        /** One event of the device, recorded again and again. */
        private static final class Event implements Marker {
            final PointerPointer<?> handle = NativeLifetime.outliveScope(emptyEventSlot());
        }

        SideStream(Device device) {
            this.impl = torch.getDeviceGuardImpl(device.type());
            this.device = NativeLifetime.outliveScope(new Device(device.type(), device.index()));
            this.transfer = NativeLifetime.outliveScope(impl.getStreamFromGlobalPool(this.device, false));
        }

        @Override
        public Marker copyIn(Tensor[] deviceTensors, Tensor[] host) {
            try (OptionalStreamGuard onTransfer = new OptionalStreamGuard(transfer)) {
                copyAll(deviceTensors, host, true);
            }
            return record(transfer);
        }

        @Override
        public void computeWaitsFor(Marker copies) {
            Event event = (Event) copies;
            impl.block(event.handle.get(0), impl.getStream(device));
            free.push(event);
        }

        @Override
        public void computeWaitsForTransfers() {
            Event transferred = record(transfer);
            impl.block(transferred.handle.get(0), impl.getStream(device));
            free.push(transferred);
        }

        @Override
        public void copyOut(Tensor[] host, Tensor[] deviceTensors) {
            Event computed = record(impl.getStream(device));
            impl.block(computed.handle.get(0), transfer);
            free.push(computed);
            try (OptionalStreamGuard onTransfer = new OptionalStreamGuard(transfer)) {
                copyAll(host, deviceTensors, true);
            }
        }

        @Override
        public void hostWaits() {
            impl.synchronizeStream(transfer);
        }

        @Override
        public void retire(Tensor t) {
            // Made in the compute stream, read by the transfer stream: its memory is reused after the copy.
            t.record_stream(transfer);
            t.close();
        }

        @Override
        public void settle() {
            impl.synchronizeStream(transfer);
            impl.synchronizeStream(impl.getStream(device));
        }

        @Override
        public void close() {
            settle();
            for (Event event : all) {
                if (event.handle.get(0) != null) {
                    impl.destroyEvent(event.handle.get(0), device.index());
                }
            }
            all.clear();
            free.clear();
        }

        /**
         * A slot for one event handle, holding null: c10's {@code record} creates the event when the slot is null and
         * takes anything else for an event. JavaCPP's {@code PointerPointer(n)} is C++'s {@code new void*[n]}, which is
         * not zeroed: from recycled memory the slot holds a stale pointer, and recording it crashed the JVM in
         * {@code cudaEventRecord} (first seen on an H200, in the offloaded state's step-time check).
         */
        static PointerPointer<?> emptyEventSlot() {
            PointerPointer<?> slot = new PointerPointer<>(1L);
            slot.put(0, (Pointer) null);
            return slot;
        }

        private Event record(Stream stream) {
            Event event = free.poll();
            if (event == null) {
                event = new Event();
                all.add(event);
            }
            impl.record(event.handle, stream, device.index(), torch.EventFlag.PYTORCH_DEFAULT);
            return event;
        }
    }
}
