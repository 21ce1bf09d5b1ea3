package dev.muon;

import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The buffers a state home keeps away from their parameters, as the home's entries: per parameter in the optimizer's
 * order and each parameter's declared order, found by parameter, by parameter and declaration, or all at once. Each
 * home's entry adds its own bookkeeping (a file's slots, a host tensor) to a {@link Buffer}.
 *
 * @param <E> the home's entry
 */
final class KeptBuffers<E> {
    /**
     * What a kept buffer is from its declaration alone.
     *
     * @param state its parameter
     * @param spec  its declaration
     * @param shape its shape, for this parameter
     * @param dtype its dtype, for this parameter
     * @param bytes its length in bytes
     */
    record Buffer(ParameterState state, BufferSpec spec, long[] shape, torch.ScalarType dtype, long bytes) {
        static Buffer of(ParameterState state, BufferSpec spec) {
            long[] shape = spec.shape().of(state.param.shape());
            torch.ScalarType dtype = ParameterState.dtypeOf(spec, state.param);
            long elements = 1;
            for (long side : shape) {
                elements = Math.multiplyExact(elements, side);
            }
            return new Buffer(state, spec, shape, dtype, Math.multiplyExact(elements, torch.elementSize(dtype)));
        }
    }

    private final Map<ParameterState, List<E>> byState = new LinkedHashMap<>();
    private final List<E> all;
    private final Function<E, Buffer> bufferOf;

    /**
     * The entries of the buffers each parameter keeps, made in order.
     *
     * @param kept     per parameter, the declared buffers this process keeps, in order
     * @param entry    makes a buffer's entry; called in the optimizer's parameter order, then declared order
     * @param bufferOf an entry's buffer
     */
    KeptBuffers(Map<ParameterState, List<BufferSpec>> kept, Function<Buffer, E> entry, Function<E, Buffer> bufferOf) {
        this.bufferOf = bufferOf;
        List<E> every = new ArrayList<>();
        kept.forEach((state, specs) -> {
            List<E> list = new ArrayList<>();
            for (BufferSpec spec : specs) {
                list.add(entry.apply(Buffer.of(state, spec)));
            }
            byState.put(state, List.copyOf(list));
            every.addAll(list);
        });
        this.all = List.copyOf(every);
    }

    /** The parameters that keep buffers here, in the optimizer's order. */
    Set<ParameterState> states() {
        return byState.keySet();
    }

    /** A parameter's entries in declared order; none for a parameter that keeps nothing here. */
    List<E> of(ParameterState state) {
        return byState.getOrDefault(state, List.of());
    }

    /** A parameter's entry of a declaration (matched by key), or null. */
    E find(ParameterState state, BufferSpec spec) {
        for (E entry : of(state)) {
            if (bufferOf.apply(entry).spec().key().equals(spec.key())) {
                return entry;
            }
        }
        return null;
    }

    /**
     * The bytes of a parameter's buffers that its home holds now (the homes' {@code storedBytes}).
     *
     * @param state a parameter
     * @param held  whether an entry's buffer is held in the home now (written once, not dropped)
     * @return the bytes
     */
    long heldBytes(ParameterState state, Predicate<E> held) {
        long bytes = 0;
        for (E entry : of(state)) {
            if (held.test(entry)) {
                bytes += bufferOf.apply(entry).bytes();
            }
        }
        return bytes;
    }

    /** Every entry, in the optimizer's parameter order, then declared order. */
    List<E> all() {
        return all;
    }
}
