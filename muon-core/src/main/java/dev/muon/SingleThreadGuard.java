package dev.muon;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Turns two threads inside one optimizer at once into an exception instead of NaN parameters: the optimizers are
 * not thread-safe (their state and workspaces are shared between calls), and a second thread that steps while the
 * first is inside {@code step()}, {@code save()} or {@code load()} corrupts them silently. One compare-and-set per
 * call: nothing next to a step's matrix products. {@link #call} runs an optimizer's other calls that touch tensors
 * the way each of them must run.
 */
final class SingleThreadGuard {
    private final String owner;
    private final AtomicReference<Thread> inside = new AtomicReference<>();
    private volatile String insideCall;

    SingleThreadGuard(String owner) {
        this.owner = owner;
    }

    /** A call in progress; closing it lets the next one in. */
    interface Entered extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Enters a call.
     *
     * @param call the call's name, for messages
     * @return the entry, to close when the call returns
     * @throws IllegalStateException naming both threads if another thread is inside a call of this optimizer
     */
    Entered enter(String call) {
        Thread me = Thread.currentThread();
        if (!inside.compareAndSet(null, me)) {
            Thread other = inside.get();
            if (other == me) {
                // Re-entry from the same thread (e.g. a distributed load that steps nothing) is not a race.
                return () -> { };
            }
            throw new IllegalStateException(owner + "." + call + "() was called on thread '" + me.getName()
                    + "' while thread '" + (other == null ? "?" : other.getName()) + "' is inside " + owner + "."
                    + insideCall + "(); an optimizer is not thread-safe: call it from one thread at a time");
        }
        insideCall = call;
        return () -> inside.set(null);
    }

    /**
     * Runs a call that touches tensors as every such call of an optimizer runs: entered here, with its native
     * temporaries in a {@link PointerScope} released when it returns, and autograd off.
     *
     * @param call the call's name, for messages
     * @param body what the call does
     * @return what {@code body} returns
     * @throws IllegalStateException as {@link #enter} does, or as {@code body} does
     */
    <T> T call(String call, Supplier<T> body) {
        try (Entered entered = enter(call); PointerScope scope = new PointerScope();
             NoGradGuard noGrad = new NoGradGuard()) {
            return body.get();
        }
    }

    /** {@link #call} for a call that returns nothing. */
    void run(String call, Runnable body) {
        call(call, () -> {
            body.run();
            return null;
        });
    }
}
