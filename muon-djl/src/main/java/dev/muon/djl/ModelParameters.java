package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.convolutional.Convolution;
import ai.djl.util.Pair;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parameters of a DJL block, in the order and under the names of {@code Block.getParameters()}, each with the
 * dotted name that muon-core's rules read.
 *
 * <p>DJL names a child block {@code "%02d" + name} ({@code 01Linear}, {@code 03head}) and joins the path with
 * {@code _} ({@code 01SequentialBlock_03Linear_weight}). Since a name may itself hold {@code _}, the dotted name is
 * built while walking the tree rather than by splitting: each child's name without its leading counter, then the
 * parameter's own name ({@code SequentialBlock.Linear.weight}). The rules then see DJL's block classes
 * ({@code TrainableWordEmbedding} contains {@code embed}) and the names a user gave ({@code head} at the top).
 */
final class ModelParameters {

    /**
     * One parameter.
     *
     * @param name       DJL's name, the key in {@code Block.getParameters()}
     * @param ruleName   the dotted name the rules read
     * @param parameter  the parameter
     * @param convFilter whether it is the filter of one of DJL's convolutions ({@code Conv1d}, {@code Conv2d},
     *                   {@code Conv3d}: {@code [out, in, k...]}), which Muon flattens whatever its dims
     */
    record Entry(String name, String ruleName, Parameter parameter, boolean convFilter) {
        String id() {
            return parameter.getId();
        }

        /**
         * The parameter's shape, which DJL sets when it initializes the block, just before it creates the array.
         *
         * @throws IllegalStateException before that
         */
        long[] shape() {
            if (parameter.isInitialized()) {
                return parameter.getArray().getShape().getShape();
            }
            if (parameter.getShape() == null) {
                throw new IllegalStateException("parameter '" + name + "' is not initialized: the optimizer "
                        + "classifies the block's parameters once they exist (after trainer.initialize(...))");
            }
            return parameter.getShape().getShape();
        }

        /** The parameter's array, which exists once the block is initialized. */
        NDArray array() {
            if (!parameter.isInitialized()) {
                throw new IllegalStateException("parameter '" + name + "' is not initialized: the optimizer "
                        + "classifies the block's parameters once they exist (after trainer.initialize(...))");
            }
            return parameter.getArray();
        }
    }

    private final List<Entry> entries;
    /** The first entry of each id: a parameter shared by two blocks appears under two names. */
    private final Map<String, Entry> byId;

    private ModelParameters(List<Entry> entries) {
        this.entries = Collections.unmodifiableList(entries);
        Map<String, Entry> first = new LinkedHashMap<>();
        for (Entry e : entries) {
            first.putIfAbsent(e.id(), e);
        }
        this.byId = first;
    }

    /**
     * Walks a block's tree.
     *
     * @param block the model's block
     * @return its parameters
     */
    static ModelParameters of(Block block) {
        List<Entry> out = new ArrayList<>();
        walk(block, "", List.of(), out);
        return new ModelParameters(out);
    }

    /** Direct parameters first, then each child's, as {@code AbstractBaseBlock.getParameters()} lists them. */
    private static void walk(Block block, String prefix, List<String> modules, List<Entry> out) {
        for (Pair<String, Parameter> p : block.getDirectParameters()) {
            List<String> parts = new ArrayList<>(modules);
            parts.add(p.getKey());
            boolean filter = block instanceof Convolution && p.getValue().getType() == Parameter.Type.WEIGHT;
            out.add(new Entry(prefix + p.getKey(), String.join(".", parts), p.getValue(), filter));
        }
        for (Pair<String, Block> child : block.getChildren()) {
            List<String> parts = new ArrayList<>(modules);
            parts.add(moduleName(child.getKey()));
            walk(child.getValue(), prefix + child.getKey() + "_", parts, out);
        }
    }

    /** A child's name without the counter DJL puts in front ({@code 03Linear} is {@code Linear}). */
    static String moduleName(String childKey) {
        String stripped = childKey.replaceFirst("^\\d+", "");
        return stripped.isEmpty() ? childKey : stripped;
    }

    /**
     * Every parameter, in DJL's order.
     *
     * @return the entries
     */
    List<Entry> entries() {
        return entries;
    }

    /**
     * The first entry of a parameter id.
     *
     * @param id the id DJL passes to {@code update}
     * @return the entry, or null when the block has no such parameter
     */
    Entry byId(String id) {
        return byId.get(id);
    }

    /**
     * The name of a parameter id for messages.
     *
     * @param id the id
     * @return its first name, or the id itself when the block does not hold it
     */
    String nameOf(String id) {
        Entry e = byId.get(id);
        return e == null ? id : e.name();
    }

    /**
     * The name of a parameter.
     *
     * @param name DJL's name
     * @return its entry, or null
     */
    Entry byName(String name) {
        for (Entry e : entries) {
            if (e.name().equals(name)) {
                return e;
            }
        }
        return null;
    }
}
