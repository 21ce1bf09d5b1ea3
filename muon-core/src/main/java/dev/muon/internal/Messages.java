package dev.muon.internal;

/** How the library quotes a native error in its own messages. */
public final class Messages {
    private Messages() {
    }

    /**
     * The first line of an exception's message: libtorch's errors carry a C++ stack trace after it, which would
     * bury the sentence that matters in ours.
     *
     * @param e the exception
     * @return its message up to the first line break ("null" when it has none)
     */
    public static String firstLine(Throwable e) {
        String message = String.valueOf(e.getMessage());
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl);
    }

    /** The longest text {@link #shortened} quotes whole. */
    static final int QUOTED_CHARS = 80;

    /**
     * A text from a file, cut to {@value #QUOTED_CHARS} characters for a message: a crafted file may hold a name of
     * megabytes, and a message must stay one readable line.
     *
     * @param text the text
     * @return the text, or its first characters followed by how many were left out
     */
    public static String shortened(String text) {
        if (text.length() <= QUOTED_CHARS) {
            return text;
        }
        return text.substring(0, QUOTED_CHARS) + "... (" + (text.length() - QUOTED_CHARS) + " more characters)";
    }

    /**
     * A value from a file, written as {@code toString()} writes it (lists {@code [a, b]}, maps {@code {k=v}}) but
     * cut to {@value #QUOTED_CHARS} characters, for a message. Its written form is never built whole: a pickle's
     * memo lets a 2 kB file hold a list that shares its sublists, whose {@code toString()} would be gigabytes,
     * so the walk stops as soon as the text is long enough.
     *
     * @param value a collection, map, other iterable (a pickle's tuple, written {@code (a, b)}), {@code long[]},
     *              string, number, boolean or null
     * @return its text, or its first characters followed by {@code "... (cut)"}
     */
    public static String shortened(Object value) {
        if (value instanceof String text) {
            return shortened(text);
        }
        StringBuilder out = new StringBuilder();
        write(value, out);
        if (out.length() <= QUOTED_CHARS) {
            return out.toString();
        }
        return out.substring(0, QUOTED_CHARS) + "... (cut)";
    }

    /** Appends {@code value}'s text until {@code out} is longer than {@value #QUOTED_CHARS}, then returns. */
    private static void write(Object value, StringBuilder out) {
        if (value instanceof java.util.Map<?, ?> map) {
            out.append('{');
            String separator = "";
            for (java.util.Map.Entry<?, ?> e : map.entrySet()) {
                if (out.length() > QUOTED_CHARS) {
                    return;
                }
                out.append(separator);
                write(e.getKey(), out);
                out.append('=');
                write(e.getValue(), out);
                separator = ", ";
            }
            out.append('}');
        } else if (value instanceof java.util.Collection<?> items) {
            writeAll(items, '[', ']', out);
        } else if (value instanceof Iterable<?> items) {
            // A pickle's tuple: this class is below PickleValues, which names it only as an Iterable.
            writeAll(items, '(', ')', out);
        } else if (value instanceof long[] longs) {
            out.append('[');
            for (int i = 0; i < longs.length && out.length() <= QUOTED_CHARS; i++) {
                out.append(i == 0 ? "" : ", ").append(longs[i]);
            }
            out.append(']');
        } else {
            String text = String.valueOf(value);
            // A string of megabytes is cut before it is copied.
            out.append(text, 0, Math.min(text.length(), QUOTED_CHARS + 1));
        }
    }

    private static void writeAll(Iterable<?> items, char open, char close, StringBuilder out) {
        out.append(open);
        String separator = "";
        for (Object item : items) {
            if (out.length() > QUOTED_CHARS) {
                return;
            }
            out.append(separator);
            write(item, out);
            separator = ", ";
        }
        out.append(close);
    }
}
