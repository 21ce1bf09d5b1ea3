package dev.muon;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;

import java.util.Objects;

/** A libtorch optimizer seen as a {@link TrainingOptimizer}: its param groups are the groups. */
final class LibtorchOptimizer implements TrainingOptimizer {
    private final Optimizer optimizer;

    LibtorchOptimizer(Optimizer optimizer) {
        this.optimizer = Objects.requireNonNull(optimizer, "optimizer must not be null");
    }

    @Override
    public void step() {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            optimizer.step();
        }
    }

    @Override
    public void zeroGrad() {
        optimizer.zero_grad();
    }

    @Override
    public int groupCount() {
        try (PointerScope scope = new PointerScope()) {
            return Math.toIntExact(optimizer.param_groups().size());
        }
    }

    @Override
    public double lr(int group) {
        checkGroup(group);
        try (PointerScope scope = new PointerScope()) {
            return optimizer.param_groups().get(group).options().get_lr();
        }
    }

    @Override
    public void setLr(int group, double lr) {
        checkGroup(group);
        if (!Double.isFinite(lr) || !(lr >= 0)) {
            throw new IllegalArgumentException("lr must be finite and >= 0, got " + lr);
        }
        try (PointerScope scope = new PointerScope()) {
            optimizer.param_groups().get(group).options().set_lr(lr);
        }
    }

    private void checkGroup(int group) {
        int count = groupCount();
        if (group < 0 || group >= count) {
            throw new IllegalArgumentException("group must be in [0, " + count + "), got " + group);
        }
    }
}
