package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.Arrays;
import java.util.List;

/**
 * Where each Muon parameter keeps its state between updates, by its position in the optimizer's order: a
 * {@link StateHome}, or none (the buffers live with the parameter, in its {@link ParameterState}). Made when the
 * optimizer is built ({@link StatePlacement}); what reads a parameter's buffers outside its update asks here.
 */
final class StateHomes {
    /** No parameter keeps its state away from it. */
    static final StateHomes NONE = new StateHomes(new StateHome[0], List.of());

    private final StateHome[] byPosition;
    private final List<StateHome> homes;

    StateHomes(StateHome[] byPosition, List<StateHome> homes) {
        this.byPosition = byPosition.clone();
        this.homes = List.copyOf(homes);
    }

    /** The home of the parameter at a position, or null: its buffers live with it. */
    StateHome of(int position) {
        return position < byPosition.length ? byPosition[position] : null;
    }

    /** The distinct homes, in order. */
    List<StateHome> all() {
        return homes;
    }

    /**
     * What removes the state files of these homes ({@link FileHome#release}), or null when none keeps a file: for the
     * optimizer's cleaner, so it holds the releases only, never a home or the optimizer.
     */
    Runnable fileReleases() {
        List<Runnable> releases = homes.stream().filter(FileHome.class::isInstance)
                .map(home -> ((FileHome) home).release()).toList();
        return releases.isEmpty() ? null : () -> releases.forEach(Runnable::run);
    }

    /**
     * A buffer of the parameter at a position: the live one while it is with the parameter (or resident for its
     * update), else a copy of what its home stores; null when there is none.
     */
    Tensor buffer(int position, ParameterState state, String key) {
        Tensor here = state.buffer(key);
        StateHome home = of(position);
        if (here != null || home == null) {
            return here;
        }
        return state.declared.stream().filter(spec -> spec.key().equals(key)).findFirst()
                .map(spec -> home.read(state, spec)).orElse(null);
    }

    /** The bytes of the buffers this process keeps for the parameter at a position, wherever they live. */
    long bytes(int position, ParameterState state) {
        StateHome home = of(position);
        return home == null ? state.bytes() : home.storedBytes(state);
    }

    @Override
    public String toString() {
        return "StateHomes" + Arrays.toString(byPosition);
    }
}
