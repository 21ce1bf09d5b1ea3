package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The bytes a native kernel packs its operands into, grown to the largest request so far and kept, so that the
 * calls after the first allocate nothing. One user at a time, as the workspace it belongs to.
 */
final class PackingScratch {
    private Tensor bytes;

    /**
     * The address of at least {@code size} bytes, valid until the next call.
     *
     * @param size the bytes needed
     * @return their address
     */
    long address(long size) {
        if (bytes == null || bytes.numel() < size) {
            if (bytes != null) {
                bytes.close();
            }
            bytes = NativeLifetime.outliveScope(torch.empty(new long[]{size}, new TensorOptions(ScalarType.Byte),
                    null));
        }
        return bytes.data_ptr().address();
    }
}
