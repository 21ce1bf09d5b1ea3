package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.Orthogonalizer;
import dev.muon.state.ParameterSpec;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One Muon parameter: its handle, its matrix layout, its orthogonalizer, its device's fused momentum and update
 * kernels (null: libtorch's ops), its row blocks (null: none), and the state buffers its update declares
 * ({@link BufferSpec}: the momentum buffer, NorMuon's second moment), each created (zeros) at its first use.
 *
 * <p>The buffers live here, with the parameter, or, under a {@link StateStorage} that keeps them elsewhere, in a home
 * ({@link StateHomes}): then they are resident here only during the parameter's update.
 */
final class ParameterState {
    final Tensor param;
    final Tensor matrix;
    final MatrixLayout layout;
    final Orthogonalizer orthogonalizer;
    /** Chosen once at build ({@link FusedKernelSelection}); null when no provider serves the parameter. */
    final FusedUpdateKernels fusedKernels;
    /** The parameter's name in states and checkpoints. */
    final String name;
    /** How messages name it. */
    final String label;
    final long identity;
    /** The row blocks it is orthogonalized in ({@link RowSplit}); null for the whole matrix at once. */
    final RowBlocks rowBlocks;
    /** The state buffers its update keeps, in the recipe's order ({@link UpdateRecipe#buffers()}). */
    final List<BufferSpec> declared;
    /** The buffers by key, those created so far. */
    private final Map<String, Tensor> buffers = new HashMap<>();
    /** The matrix views of the buffers of the parameter's shape, by key. */
    private final Map<String, Tensor> matrices = new HashMap<>();
    /**
     * Where a buffer's memory comes from at its first use: null, a new tensor on the parameter's device; or the
     * working memory of the home that keeps the buffers between updates.
     */
    private Function<BufferSpec, Tensor> lender;

    /** A parameter with momentum in its dtype, no split and no fused kernels; for tests. */
    ParameterState(Tensor param, MatrixLayout layout, Orthogonalizer orthogonalizer, String label) {
        this(param, layout, orthogonalizer, label, label, null, null, List.of(UpdateRecipe.MOMENTUM));
    }

    ParameterState(Tensor param, MatrixLayout layout, Orthogonalizer orthogonalizer, String name, String label,
                   FusedUpdateKernels fusedKernels, RowBlocks rowBlocks, List<BufferSpec> declared) {
        // Our own handle on the parameter, so that a PointerScope of the caller cannot free it under us.
        this.param = NativeLifetime.outliveScope(new Tensor(param));
        this.matrix = NativeLifetime.outliveScope(new Tensor(layout.matrixView(this.param)));
        this.layout = layout;
        this.orthogonalizer = orthogonalizer;
        this.fusedKernels = fusedKernels;
        this.name = name;
        this.label = label;
        this.identity = identityOf(param);
        this.rowBlocks = rowBlocks;
        this.declared = List.copyOf(declared);
    }

    /** The address of the parameter's TensorImpl: equal for every handle on the same tensor. */
    static long identityOf(Tensor t) {
        return t.unsafeGetTensorImpl().address();
    }

    /** A declared buffer by its key while it is here, or null: before its first use, or kept elsewhere. */
    Tensor buffer(String key) {
        return buffers.get(key);
    }

    /** Makes a buffer resident for the parameter's update (its home brought it in). */
    void install(BufferSpec spec, Tensor tensor) {
        matrices.remove(spec.key());
        buffers.put(spec.key(), tensor);
    }

    /** Takes a resident buffer away (its home stored it, or lets it go); null if it was not resident. */
    Tensor evict(BufferSpec spec) {
        Tensor view = matrices.remove(spec.key());
        if (view != null) {
            // A handle of the update's own, on memory its home lends again: nothing else holds it.
            view.close();
        }
        return buffers.remove(spec.key());
    }

    /** A declared buffer, created (zeros, of its declared shape and dtype) at its first use. */
    Tensor bufferForUpdate(BufferSpec spec) {
        Tensor b = buffers.get(spec.key());
        if (b == null) {
            Tensor lent = lender == null ? null : lender.apply(spec);
            if (lent != null) {
                b = lent;
                b.zero_();
            } else {
                b = NativeLifetime.outliveScope(newBuffer(spec).zero_());
            }
            buffers.put(spec.key(), b);
        }
        return b;
    }

    /**
     * Takes the memory of buffers created at their first use from {@code from} (a home's working memory, which
     * takes them back when it stores them), so that a step holds no more than the buffers in flight.
     */
    void lendFrom(Function<BufferSpec, Tensor> from) {
        this.lender = from;
    }

    /** A declared buffer of the parameter's shape in the parameter's matrix view, created at its first use. */
    Tensor bufferMatrix(BufferSpec spec) {
        Tensor view = matrices.get(spec.key());
        if (view == null) {
            view = NativeLifetime.outliveScope(new Tensor(layout.matrixView(bufferForUpdate(spec))));
            matrices.put(spec.key(), view);
        }
        return view;
    }

    /** A new, uninitialized tensor of a declared buffer's shape and dtype, on the parameter's device. */
    Tensor newBuffer(BufferSpec spec) {
        return torch.empty(spec.shape().of(param.shape()), new TensorOptions(dtypeOf(spec, param))
                .device(new DeviceOptional(param.device())), null);
    }

    /** Forgets a buffer (a state without one for this parameter was restored): the next update starts it anew. */
    void drop(BufferSpec spec) {
        buffers.remove(spec.key());
        matrices.remove(spec.key());
    }

    /** The bytes of the buffers held here for the parameter. */
    long bytes() {
        long bytes = 0;
        for (Tensor b : buffers.values()) {
            bytes += b.numel() * b.element_size();
        }
        return bytes;
    }

    /** The dtype a declared buffer of a parameter is kept in. */
    static ScalarType dtypeOf(BufferSpec spec, Tensor param) {
        return ParameterSpec.scalarType(spec.dtype().of(ParameterSpec.dtypeName(param.scalar_type())));
    }

    /** The bytes the declared buffers of a parameter take once its update has run: the assignment table's. */
    static long declaredBytes(List<BufferSpec> declared, Tensor param) {
        long bytes = 0;
        for (BufferSpec spec : declared) {
            long entries = 1;
            for (long side : spec.shape().of(param.shape())) {
                entries *= side;
            }
            bytes += entries * torch.elementSize(dtypeOf(spec, param));
        }
        return bytes;
    }
}
