package dev.muon;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The working memory of a {@link StateHome}: flat byte slabs on one device, each lent as a view of one buffer's shape
 * and dtype while that buffer is in flight (read ahead, or resident for its parameter's update) and taken back
 * after. Every slab is as large as the largest buffer lent so far, so that any buffer fits any free slab, and there
 * are as many as were lent at once: the buffers of two units, whatever the model's mix of shapes. Nothing is
 * allocated in steady state.
 */
final class WorkingBuffers {
    private final Device device;
    private final ArrayDeque<Tensor> free = new ArrayDeque<>();
    /** The slab behind each lent view, by the address of the view's data. */
    private final Map<Long, Tensor> lent = new HashMap<>();
    private long slabBytes;

    WorkingBuffers(Device device) {
        this.device = NativeLifetime.outliveScope(new Device(device.type(), device.index()));
    }

    /**
     * A contiguous tensor of a buffer's shape and dtype, its values undefined, in a free slab (a new one if none is
     * free).
     *
     * @param shape the buffer's shape
     * @param dtype its dtype
     * @param bytes its bytes
     * @return the view, to {@link #giveBack} after use
     */
    Tensor take(long[] shape, torch.ScalarType dtype, long bytes) {
        if (bytes == 0) {
            return NativeLifetime.outliveScope(torch.empty(shape, new TensorOptions(dtype)
                    .device(new DeviceOptional(device)), null));
        }
        if (bytes > slabBytes) {
            // The slabs in use grow when they come back.
            free.forEach(Tensor::close);
            free.clear();
            slabBytes = bytes;
        }
        Tensor slab = free.poll();
        if (slab == null) {
            slab = NativeLifetime.outliveScope(torch.empty(new long[]{slabBytes},
                    new TensorOptions(torch.ScalarType.Byte).device(new DeviceOptional(device)), null));
        }
        Tensor view = NativeLifetime.outliveScope(slab.narrow(0, 0, bytes).view(dtype).view(shape));
        lent.put(view.data_ptr().address(), slab);
        return view;
    }

    /**
     * Takes back a view {@link #take} lent, and closes its handle.
     *
     * @param view the view, or a tensor not lent here
     * @return whether it was lent here; a tensor that was not is left to the caller
     */
    boolean giveBack(Tensor view) {
        Tensor slab = view.numel() == 0 ? null : lent.remove(view.data_ptr().address());
        if (slab == null) {
            return false;
        }
        view.close();
        if (slab.numel() == slabBytes) {
            free.push(slab);
        } else {
            slab.close();
        }
        return true;
    }

    /** The bytes of the slabs, lent or free. */
    long bytes() {
        long bytes = 0;
        for (Tensor slab : free) {
            bytes += slab.numel();
        }
        for (Tensor slab : lent.values()) {
            bytes += slab.numel();
        }
        return bytes;
    }

    /** Frees the free slabs; lent ones are freed with their views' owners. */
    void close() {
        free.forEach(Tensor::close);
        free.clear();
        lent.clear();
    }
}
