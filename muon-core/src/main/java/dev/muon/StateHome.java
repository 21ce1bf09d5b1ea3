package dev.muon;

import org.bytedeco.pytorch.Tensor;

/**
 * Where the declared buffers of some Muon parameters live between their updates when that is not with the parameter
 * ({@link StateStorage}): pinned host memory ({@link HostMemoryHome}) or a file ({@link FileHome}). During a
 * parameter's update its buffers are resident ({@link ParameterState#install}): plain tensors on the parameter's
 * device that the update's slots read and write as always; a home only moves them in before the update and out after
 * it, so the update is the same computation on the same values.
 *
 * <p>{@link PlannedUpdates} drives a step: {@link #bringIn} before a parameter's update, {@link #prefetch} of the
 * next one right after, {@link #sendBack} after the update, {@link #abandon} for every parameter in flight when
 * something threw. Every buffer is one of {@link ParameterState#declared}: a home names none of them.
 */
interface StateHome {
    /**
     * Checks, before a step changes anything, what can be checked without reading the buffers (a file's length, the
     * run identity and generation of each buffer's slot).
     *
     * @throws dev.muon.state.StateFileException naming the buffer, if its stored state is damaged or not this run's
     */
    void checkBeforeStep();

    /**
     * Starts bringing in the buffers of a parameter whose update comes next; {@link #bringIn} finishes it.
     *
     * @param state the parameter
     */
    void prefetch(ParameterState state);

    /**
     * Makes the stored buffers of a parameter resident for its update, finishing a {@link #prefetch} if one was
     * started. A buffer not stored yet stays absent, and the update creates it (zeros) as it would with the
     * parameter.
     *
     * @param state         the parameter
     * @param beforeChanges whether the step has changed nothing yet (this is its first unit): what was read not
     *                      being what this run stored is then a {@link dev.muon.state.StateFileException}, which
     *                      says that nothing was changed
     * @throws IllegalStateException naming the buffer, if what was read is not what this run stored
     */
    void bringIn(ParameterState state, boolean beforeChanges);

    /**
     * After a parameter's update: its resident buffers are stored, and leave the parameter.
     *
     * @param state the parameter
     * @throws java.io.UncheckedIOException if a buffer cannot be stored; what was stored before stays readable
     */
    void sendBack(ParameterState state);

    /**
     * After a failure: the parameter's resident and prefetched buffers are let go unstored, so that what this home
     * holds stays as the last {@link #sendBack} left it.
     *
     * @param state the parameter
     */
    void abandon(ParameterState state);

    /**
     * A copy of a buffer as stored, on the parameter's device, or null if none is stored.
     *
     * @param state the parameter
     * @param spec  one of its declared buffers
     * @return a new tensor the caller owns
     */
    Tensor read(ParameterState state, BufferSpec spec);

    /**
     * Stores a buffer's value for a restore, staged: what this home holds stays in force until
     * {@link #commitWrites}, and {@link #discardWrites} lets it go.
     *
     * @param state the parameter
     * @param spec  one of its declared buffers
     * @param value its value, of the buffer's shape, in the buffer's or the parameter's dtype
     * @throws java.io.UncheckedIOException if it cannot be stored
     */
    void write(ParameterState state, BufferSpec spec, Tensor value);

    /**
     * Forgets a stored buffer for a restore, staged as {@link #write} is: the next update starts it anew.
     *
     * @param state the parameter
     * @param spec  one of its declared buffers
     */
    void drop(ParameterState state, BufferSpec spec);

    /** Puts every staged {@link #write} and {@link #drop} in force; cannot fail. */
    void commitWrites();

    /** Lets go of every staged {@link #write} and {@link #drop}: this home holds what it held before them. */
    void discardWrites();

    /**
     * The bytes of a parameter's buffers this home stores.
     *
     * @param state the parameter
     * @return bytes
     */
    long storedBytes(ParameterState state);

    /**
     * The bytes of working memory (device or RAM) this home holds now: the resident and prefetched buffers and the
     * tensors kept for reuse.
     *
     * @return bytes
     */
    long workingBytes();

    /** Frees what this home holds and removes its files; a second call does nothing. */
    void close();
}
