package dev.muon.internal;

import java.util.List;
import java.util.Objects;

/**
 * The copy a value type keeps of a list argument: immutable, and refusing a null list or element by its name and
 * index ({@code entries[3] must not be null}) where {@link List#copyOf} would throw without saying which.
 */
public final class NullFreeList {
    private NullFreeList() {
    }

    /**
     * Copies a list argument.
     *
     * @param list the argument
     * @param name how messages name it
     * @param <T>  the element type
     * @return an immutable copy
     * @throws NullPointerException naming the list, or the element by its index, if one is null
     */
    public static <T> List<T> copyOf(List<T> list, String name) {
        Objects.requireNonNull(list, name + " must not be null");
        for (int i = 0; i < list.size(); i++) {
            if (list.get(i) == null) {
                throw new NullPointerException(name + "[" + i + "] must not be null");
            }
        }
        return List.copyOf(list);
    }
}
