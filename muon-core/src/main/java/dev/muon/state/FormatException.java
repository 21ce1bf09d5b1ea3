package dev.muon.state;

/**
 * Bytes that break a rule of the format they claim to be: thrown by the byte-level readers of this package
 * ({@link Json}, {@link Safetensors}, {@link WeightsOnlyUnpickler}, {@link TorchLoad}) with the entry it concerns and
 * the rule it breaks, so that the codec above can name the file as well.
 *
 * <p>Not API (see this package).
 */
final class FormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String entry;
    private final String rule;

    /**
     * A broken rule.
     *
     * @param entry where in the file: a tensor's name, a record, a byte offset
     * @param rule  what is wrong, as a sentence fragment with the value found ("must be ..., got ...")
     */
    public FormatException(String entry, String rule) {
        super(entry + ": " + rule);
        this.entry = entry;
        this.rule = rule;
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
     * @return the rule and the value found
     */
    public String rule() {
        return rule;
    }
}
