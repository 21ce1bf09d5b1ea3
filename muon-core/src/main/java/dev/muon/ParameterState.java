package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * One Muon parameter: its handle, its matrix layout, its orthogonalizer, its device's fused momentum and update
 * stages (null: libtorch's ops), its row blocks (null: none), its momentum buffer and, with NorMuon, its per-row
 * second moment.
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
    /** The dtype its momentum buffer is stored in. */
    final MomentumPrecision momentumPrecision;
    private Tensor momentumBuffer;
    private Tensor momentumMatrix;
    /** NorMuon's per-row second moment ({@link NeuronNormalization}), null before its first update or when off. */
    private Tensor secondMoment;

    /** A parameter with momentum in its dtype, no split and no fused stages; for tests. */
    ParameterState(Tensor param, MatrixLayout layout, Orthogonalizer orthogonalizer, String label) {
        this(param, layout, orthogonalizer, label, label, null, null, MomentumPrecision.PARAMETER);
    }

    ParameterState(Tensor param, MatrixLayout layout, Orthogonalizer orthogonalizer, String name, String label,
                   FusedUpdateKernels fusedKernels, RowBlocks rowBlocks, MomentumPrecision momentumPrecision) {
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
        this.momentumPrecision = momentumPrecision;
    }

    /** The address of the parameter's TensorImpl: equal for every handle on the same tensor. */
    static long identityOf(Tensor t) {
        return t.unsafeGetTensorImpl().address();
    }

    /** The momentum buffer in the parameter's shape, or null before the first step that had a gradient. */
    Tensor momentumBuffer() {
        return momentumBuffer;
    }

    /** Forgets the momentum buffer (a checkpoint without one for this parameter was loaded). */
    void dropMomentum() {
        momentumBuffer = null;
        momentumMatrix = null;
    }

    /** NorMuon's per-row second moment, or null before the first NorMuon update. */
    Tensor secondMoment() {
        return secondMoment;
    }

    /** NorMuon's per-row second moment, created (zeros, {@link NeuronNormalization#stateDtype}) on first use. */
    Tensor secondMomentForUpdate() {
        if (secondMoment == null) {
            secondMoment = NativeLifetime.outliveScope(newSecondMoment().zero_());
        }
        return secondMoment;
    }

    /** A new, uninitialized tensor of this parameter's second moment's shape, dtype and device. */
    Tensor newSecondMoment() {
        return torch.empty(NeuronNormalization.stateShape(layout.shape()),
                new TensorOptions(NeuronNormalization.stateDtype(param.scalar_type()))
                        .device(new DeviceOptional(param.device())), null);
    }

    /** A new, uninitialized tensor of this parameter's momentum buffer's shape, dtype and device. */
    Tensor newMomentum() {
        return momentumPrecision == MomentumPrecision.BFLOAT16
                ? torch.empty_like(param, new TensorOptions(torch.ScalarType.BFloat16), null)
                : torch.empty_like(param);
    }

    /** Forgets NorMuon's second moment (a checkpoint without one for this parameter was loaded). */
    void dropSecondMoment() {
        secondMoment = null;
    }

    /** The momentum buffer as a matrix, created (zeros, in its {@link MomentumPrecision}) on first use. */
    Tensor momentumMatrix() {
        if (momentumMatrix == null) {
            momentumBuffer = NativeLifetime.outliveScope(momentumPrecision == MomentumPrecision.BFLOAT16
                    ? torch.zeros_like(param, new TensorOptions(torch.ScalarType.BFloat16), null)
                    : torch.zeros_like(param));
            momentumMatrix = NativeLifetime.outliveScope(new Tensor(layout.matrixView(momentumBuffer)));
        }
        return momentumMatrix;
    }
}
