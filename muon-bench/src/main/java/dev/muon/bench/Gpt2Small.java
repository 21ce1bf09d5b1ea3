package dev.muon.bench;

/**
 * GPT-2 small's dimensions, which the benchmarks' GPT-2 parameter sets take their shapes from: Hugging Face's
 * {@code gpt2} configuration ({@code n_embd}, {@code n_layer}, {@code vocab_size}, {@code n_positions}).
 */
final class Gpt2Small {
    /** The model width, {@code n_embd}. */
    static final int WIDTH = 768;
    /** The transformer blocks, {@code n_layer}. */
    static final int LAYERS = 12;
    /** The token vocabulary, {@code vocab_size}: the rows of the token embedding and of the tied head. */
    static final int VOCAB = 50257;
    /** The context length, {@code n_positions}: the rows of the position embedding. */
    static final int CONTEXT = 1024;

    private Gpt2Small() {
    }
}
