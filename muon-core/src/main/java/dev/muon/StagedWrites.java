package dev.muon;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A restore's writes and drops of the buffers a state home keeps, staged: what the home holds stays in force until
 * {@link #commit}, and {@link #discard} lets them go ({@link StateHome#write}, {@link StateHome#drop},
 * {@link StateHome#commitWrites}, {@link StateHome#discardWrites}). Per buffer the last write or drop counts. Both
 * homes keep this protocol; what a write stages (a file's slot, a host tensor) and what putting it in force means is
 * theirs.
 *
 * @param <E> the home's entry
 * @param <W> what the home stages for a write
 */
final class StagedWrites<E, W> {
    private final KeptBuffers<E> entries;
    /** Per entry with something staged, in the order staged: the write, or empty for a drop. */
    private final Map<E, Optional<W>> staged = new LinkedHashMap<>();

    StagedWrites(KeptBuffers<E> entries) {
        this.entries = entries;
    }

    /**
     * Stages a write of a buffer this home keeps; nothing for one it does not.
     *
     * @param state the parameter
     * @param spec  one of its declared buffers
     * @param write makes what {@link #commit} puts in force, from the buffer's entry; what it throws stages nothing
     */
    void write(ParameterState state, BufferSpec spec, Function<E, W> write) {
        E entry = entries.find(state, spec);
        if (entry != null) {
            staged.put(entry, Optional.of(write.apply(entry)));
        }
    }

    /**
     * Stages a drop of a buffer this home keeps; nothing for one it does not.
     *
     * @param state the parameter
     * @param spec  one of its declared buffers
     */
    void drop(ParameterState state, BufferSpec spec) {
        E entry = entries.find(state, spec);
        if (entry != null) {
            staged.put(entry, Optional.empty());
        }
    }

    /**
     * Puts what is staged in force, then stages nothing.
     *
     * @param write puts a staged write in force; it must not fail ({@link StateHome#commitWrites} cannot)
     * @param drop  forgets an entry's stored buffer
     */
    void commit(BiConsumer<E, W> write, Consumer<E> drop) {
        staged.forEach((entry, change) -> change.ifPresentOrElse(w -> write.accept(entry, w),
                () -> drop.accept(entry)));
        staged.clear();
    }

    /** Lets go of what is staged: the home holds what it held before. */
    void discard() {
        staged.clear();
    }
}
