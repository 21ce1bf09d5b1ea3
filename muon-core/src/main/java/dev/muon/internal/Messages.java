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
}
