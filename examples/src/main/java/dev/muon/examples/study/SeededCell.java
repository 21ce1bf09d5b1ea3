package dev.muon.examples.study;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A cell of either study's plan ({@link StudyCell}, {@link SecondCell}): one configuration at one seed, identified
 * in the results by its key. A plan runs a configuration at several seeds, and asks which of them the results lack.
 *
 * @param <C> the cell's own type
 */
interface SeededCell<C extends SeededCell<C>> {
    /** What identifies the cell in the results; the same for a cell read back from its row. */
    String key();

    /**
     * The same cell with another seed.
     *
     * @param value the seed
     * @return the cell
     */
    C withSeed(long value);

    /**
     * This configuration's cells at the given seeds that the results lack.
     *
     * @param seeds    the seeds, in the order to run them
     * @param finished the finished runs (or what the plan keeps of them) by key
     * @return the missing cells, in the seeds' order
     */
    default List<C> missing(List<Long> seeds, Map<String, ?> finished) {
        List<C> out = new ArrayList<>();
        for (long seed : seeds) {
            C c = withSeed(seed);
            if (!finished.containsKey(c.key())) {
                out.add(c);
            }
        }
        return out;
    }
}
