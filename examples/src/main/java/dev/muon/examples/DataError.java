package dev.muon.examples;

/**
 * A problem with the files of a run, its data or its output folder, that the user can fix: {@link ExampleCli}
 * prints its message as one line and exits with status 1. The message names the file or option and what is wrong
 * with it.
 */
public final class DataError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * The error.
     *
     * @param message the file or option and the rule it breaks, one line
     */
    public DataError(String message) {
        super(message);
    }

    /**
     * The error, with what caused it (printed by {@code --debug}).
     *
     * @param message the file or option and the rule it breaks, one line
     * @param cause   the underlying exception
     */
    public DataError(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * What went wrong with a file, in words: {@code NoSuchFileException} says only the path.
     *
     * @param e the exception
     * @return the reason, such as {@code no such file or folder}
     */
    public static String reason(java.io.IOException e) {
        if (e instanceof java.nio.file.NoSuchFileException) {
            return "no such file or folder";
        }
        if (e instanceof java.nio.file.AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof java.nio.file.FileAlreadyExistsException) {
            return "a file of that name is in the way";
        }
        if (e instanceof java.nio.file.FileSystemException fs && fs.getReason() != null) {
            return fs.getReason();
        }
        return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }
}
