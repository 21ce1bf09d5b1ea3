package dev.muon.state;

import dev.muon.internal.Messages;

import java.util.Arrays;
import java.util.List;

/**
 * The values of a PyTorch pickle that have no plain Java type: tuples, and the tensors and storages that a
 * {@code torch.save} file references. Dicts are {@link java.util.Map}, lists {@link List}, ints {@link Long},
 * floats {@link Double}, strings, booleans and None (null).
 *
 * <p>Not API (see this package).
 */
final class PickleValues {
    private PickleValues() {
    }

    /**
     * A Python tuple.
     *
     * @param items the elements
     */
    public record Tuple(List<Object> items) implements Iterable<Object> {
        /** Copies. */
        public Tuple {
            // Python's None is a null element: List.copyOf would refuse it.
            items = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(items));
        }

        /**
         * The elements in order: what {@link Messages#shortened(Object)} quotes, written {@code (a, b)}.
         *
         * @return an iterator over {@link #items()}
         */
        @Override
        public java.util.Iterator<Object> iterator() {
            return items.iterator();
        }

        /**
         * A tuple of the given elements.
         *
         * @param items the elements
         * @return the tuple
         */
        public static Tuple of(Object... items) {
            return new Tuple(Arrays.asList(items));
        }
    }

    /**
     * A storage a {@code torch.save} file holds as the record {@code data/<key>}: {@code numel} elements of
     * {@code kind}.
     *
     * @param kind  the element type
     * @param key   the record's key
     * @param numel the declared element count
     */
    public record StorageRef(TensorKind kind, String key, long numel) {
    }

    /**
     * A tensor of a {@code torch.save} file, as {@code torch._utils._rebuild_tensor_v2} describes it: a view of a
     * storage; its bounds are checked when it is made into a tensor ({@link TorchLoad}).
     *
     * @param storage the storage
     * @param offset  the view's storage offset, in elements
     * @param size    the view's sizes
     * @param stride  the view's strides, in elements
     */
    public record TensorRef(StorageRef storage, long offset, long[] size, long[] stride) {
        /** Copies. */
        public TensorRef {
            size = size.clone();
            stride = stride.clone();
        }

        @Override
        public long[] size() {
            return size.clone();
        }

        @Override
        public long[] stride() {
            return stride.clone();
        }
    }
}
