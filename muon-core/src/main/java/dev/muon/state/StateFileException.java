package dev.muon.state;

import dev.muon.internal.TorchNatives;

import java.nio.file.Path;

/**
 * A file that is not a well-formed state file of its format: truncated, corrupt, crafted, or of another kind. The
 * message names the file, the entry and the rule it breaks; nothing of the file was used, and no optimizer
 * changed.
 */
public final class StateFileException extends IllegalStateException {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final String entry;
    private final String rule;

    /**
     * A broken rule.
     *
     * @param format what the file was read as ("checkpoint", "torch state dict")
     * @param file   the file
     * @param entry  where in it
     * @param rule   what is wrong, with the value found
     * @param cause  the underlying exception, or null
     */
    public StateFileException(String format, Path file, String entry, String rule, Throwable cause) {
        super(format + " " + file + ": " + entry + " " + rule + "; nothing was changed", cause);
        this.file = file;
        this.entry = entry;
        this.rule = rule;
    }

    /**
     * The file.
     *
     * @return its path
     */
    public Path file() {
        return file;
    }

    /**
     * Where in the file.
     *
     * @return the entry
     */
    public String entry() {
        return entry;
    }

    /**
     * What is wrong.
     *
     * @return the rule with the value found
     */
    public String rule() {
        return rule;
    }
}
