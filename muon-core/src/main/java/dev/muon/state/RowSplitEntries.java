package dev.muon.state;

import dev.muon.RowSplit;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A row split as both files spell it: {@code {"per_head": n}} or {@code {"split_rows": [r1, r2, ...]}}, in a
 * checkpoint's JSON document and in a PyTorch state file's {@code row_splits}.
 */
final class RowSplitEntries {
    private RowSplitEntries() {
    }

    /** The entry of a split: integers as {@code long}, as both files' readers give them back. */
    static Map<String, Object> toMap(RowSplit split) {
        if (split.headDim() > 0) {
            return Map.of("per_head", (long) split.headDim());
        }
        List<Object> sizes = new ArrayList<>();
        for (int size : split.blockSizes()) {
            sizes.add((long) size);
        }
        return Map.of("split_rows", sizes);
    }

    /**
     * The split an entry holds.
     *
     * @param entry the entry
     * @param where how messages name it
     * @throws FormatException if it is not one of the two forms, or a size is not a positive 32-bit integer
     */
    static RowSplit fromMap(Object entry, String where) {
        if (!(entry instanceof Map<?, ?> m) || m.size() != 1
                || !(m.containsKey("per_head") || m.get("split_rows") instanceof List<?>)) {
            throw new FormatException(where, "must be null, {\"per_head\": n} or {\"split_rows\": [...]}");
        }
        try {
            if (m.containsKey("per_head")) {
                return RowSplit.perHead(intValue(m.get("per_head"), where));
            }
            List<?> sizes = (List<?>) m.get("split_rows");
            int[] rows = new int[sizes.size()];
            for (int k = 0; k < rows.length; k++) {
                rows[k] = intValue(sizes.get(k), where);
            }
            return RowSplit.splitRows(rows);
        } catch (IllegalArgumentException e) {
            throw new FormatException(where, e.getMessage());
        }
    }

    private static int intValue(Object v, String where) {
        if (!(v instanceof Long l) || l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
            throw new FormatException(where, "must hold 32-bit integers, got "
                    + dev.muon.internal.Messages.shortened(v));
        }
        return (int) (long) l;
    }
}
