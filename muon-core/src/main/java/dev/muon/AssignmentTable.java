package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The assignment table both modules print and log: one fixed-width line per parameter (name, shape, dtype, optimizer,
 * lr, optimizer state in bytes, why), the counts and the state against AdamW alone, then the parameters left out,
 * wrapped, and any notes of the binding (which kernels run, say).
 *
 * <pre>{@code
 * name        shape      dtype     opt     lr          state bytes  why
 * fc1.weight  [64, 784]  float32   muon    0.001000         200704  hidden matrix
 * fc2.weight  [10, 64]   float32   adamw   0.001000           5120  output layer (last matrix)
 * 1 on Muon, 1 on AdamW; state 205824 bytes = 0.506 x AdamW alone (406528)
 * }</pre>
 */
public final class AssignmentTable {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The widest line a list in the table takes before it wraps. */
    static final int WIDTH = 100;

    private AssignmentTable() {
    }

    /**
     * One parameter's line.
     *
     * @param name       the parameter's name
     * @param shape      its shape
     * @param dtype      its dtype's name
     * @param optimizer  the optimizer that updates it
     * @param reason     why (the rule or override that decided), with any note of the binding
     * @param lr         the lr its update uses: Muon's lr times the shape ratio and extra scale, or AdamW's lr
     * @param stateBytes the optimizer state it holds: Muon's declared buffers, AdamW's two moments, 0 for an alias
     */
    public record Row(String name, long[] shape, String dtype, OptimizerKind optimizer, String reason, double lr,
                      long stateBytes) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Copies the shape.
         *
         * @throws NullPointerException if a reference is null
         */
        public Row {
            Objects.requireNonNull(name, "name must not be null");
            shape = shape.clone();
        }

        /**
         * The shape.
         *
         * @return a copy of the shape
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }
    }

    /**
     * The bytes of Muon state a parameter holds: each buffer its update declares, of the declared shape and dtype.
     *
     * @param declared the recipe's buffers ({@link UpdateRecipe#buffers()})
     * @param shape    the parameter's shape
     * @param rows     the shape of one entry per row of its matrix view (a {@link BufferSpec.Shape#ROWS} buffer's)
     * @param dtype    the parameter's dtype name
     * @return the bytes
     */
    public static long muonStateBytes(List<BufferSpec> declared, long[] shape, long[] rows, String dtype) {
        long bytes = 0;
        for (BufferSpec spec : declared) {
            long[] of = spec.shape() == BufferSpec.Shape.ROWS ? rows : spec.shape().of(shape);
            bytes += elements(of) * elementBytes(spec.dtype().of(dtype));
        }
        return bytes;
    }

    /**
     * The elements of a shape.
     *
     * @param shape the sizes
     * @return their product
     */
    public static long elements(long[] shape) {
        long n = 1;
        for (long side : shape) {
            n *= side;
        }
        return n;
    }

    /**
     * The bytes of one element of a dtype, by name.
     *
     * @param dtype {@code float64}, {@code float32}, {@code float16}, {@code bfloat16}, or an integer dtype's name
     * @return its size
     * @throws IllegalArgumentException for a name this table does not know
     */
    public static int elementBytes(String dtype) {
        return switch (dtype) {
            case "float64", "int64", "uint64" -> 8;
            case "float32", "int32", "uint32" -> 4;
            case "float16", "bfloat16", "int16", "uint16" -> 2;
            case "int8", "uint8", "bool", "boolean" -> 1;
            default -> throw new IllegalArgumentException("no element size is known for dtype '" + dtype + "'");
        };
    }

    /**
     * The table's text.
     *
     * @param rows           every trainable parameter's line, in order
     * @param frozen         the names left out
     * @param binding        whose words the lines use
     * @param adamWOnlyBytes the state libtorch's or PyTorch's AdamW alone would hold for the same parameters
     * @param notes          further lines of the binding, each printed as it is
     * @return the table, each line ending in a newline
     */
    public static String render(List<Row> rows, List<String> frozen, Binding binding, long adamWOnlyBytes,
                                List<String> notes) {
        int nameWidth = "name".length();
        int shapeWidth = "shape".length();
        for (Row row : rows) {
            nameWidth = Math.max(nameWidth, row.name.length());
            shapeWidth = Math.max(shapeWidth, Arrays.toString(row.shape).length());
        }
        String format = "%-" + nameWidth + "s  %-" + shapeWidth + "s  %-8s  %-6s  %-10s  %12s  %s%n";
        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, format, "name", "shape", "dtype", "opt", "lr", "state bytes",
                "why"));
        int muon = 0;
        long state = 0;
        for (Row row : rows) {
            if (row.optimizer == OptimizerKind.MUON) {
                muon++;
            }
            state += row.stateBytes;
            out.append(String.format(Locale.ROOT, format, row.name, Arrays.toString(row.shape), row.dtype,
                    row.optimizer == OptimizerKind.MUON ? "muon" : "adamw",
                    String.format(Locale.ROOT, "%.4g", row.lr), row.stateBytes, row.reason));
        }
        out.append(String.format(Locale.ROOT, "%d on Muon, %d on AdamW; state %d bytes = %.3f x AdamW alone (%d)%n",
                muon, rows.size() - muon, state, adamWOnlyBytes == 0 ? 0.0 : (double) state / adamWOnlyBytes,
                adamWOnlyBytes));
        if (!frozen.isEmpty()) {
            out.append(wrapped("left out (" + binding.frozenWhy() + "): ", frozen));
        }
        notes.forEach(note -> out.append(wrappedLines(note)));
        return out.toString();
    }

    /**
     * A note's lines, each longer than {@value #WIDTH} characters broken at spaces, continued lines indented by two
     * spaces, so that no line of the table outgrows the ones around it (a progress bar's width, in DJL's log); a
     * word longer than a line keeps a line of its own.
     *
     * @param note one or more lines
     * @return the lines, each ending in a newline
     */
    public static String wrappedLines(String note) {
        StringBuilder out = new StringBuilder();
        for (String text : note.split("\n", -1)) {
            if (text.length() <= WIDTH) {
                out.append(text).append('\n');
                continue;
            }
            String indent = text.substring(0, text.length() - text.stripLeading().length());
            fill(out, indent, Arrays.asList(text.stripLeading().split(" +")));
        }
        return out.toString();
    }

    /**
     * A list after a prefix, its items separated by commas and wrapped at {@value #WIDTH} characters, continued lines
     * indented by two spaces; an item longer than a line gets a line of its own.
     *
     * @param prefix the text before the first item
     * @param items  the items
     * @return the lines, each ending in a newline
     */
    public static String wrapped(String prefix, List<String> items) {
        List<String> words = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            words.add(items.get(i) + (i + 1 < items.size() ? "," : ""));
        }
        StringBuilder out = new StringBuilder();
        fill(out, prefix, words);
        return out.toString();
    }

    /**
     * Appends {@code words} to {@code out} after {@code start}, separated by spaces, in lines of at most
     * {@value #WIDTH} characters, continued lines indented by two spaces; a word longer than a line gets a line of
     * its own. The last line ends in a newline too.
     */
    private static void fill(StringBuilder out, String start, List<String> words) {
        StringBuilder line = new StringBuilder(start);
        boolean empty = true;
        for (String word : words) {
            if (!empty && line.length() + 1 + word.length() > WIDTH) {
                out.append(line).append('\n');
                line = new StringBuilder("  ");
                empty = true;
            }
            if (!empty) {
                line.append(' ');
            }
            line.append(word);
            empty = false;
        }
        out.append(line).append('\n');
    }
}
