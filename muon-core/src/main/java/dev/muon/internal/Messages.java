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
}
