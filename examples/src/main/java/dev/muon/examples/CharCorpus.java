package dev.muon.examples;

import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * A character-level text corpus for {@link TinyGpt}: the text, its vocabulary, a 90/10 split into training and
 * validation characters, and batches of token ids drawn from a seeded generator.
 *
 * <p>The text comes from Debian's {@code fortunes} package ({@value #FORTUNES_DIR}, every plain fortune file in
 * name order, the {@code %} separators turned into blank lines), from a directory or file given on the command
 * line, or, when neither exists, from a short text embedded here, which is too small to say anything about
 * optimizers and is only there so that the example and its test run anywhere.
 */
public final class CharCorpus {
    /** Where {@code dpkg -L fortunes} puts the data files. */
    static final String FORTUNES_DIR = "/usr/share/games/fortunes";

    /** Used when no corpus is installed; a few paragraphs, repeated, so that a context window always fits. */
    static final String EMBEDDED = """
            Muon keeps a moving average of the gradient, like SGD with momentum, and replaces it with the nearest
            semi-orthogonal matrix before applying it. The replacement is computed with a few Newton-Schulz
            iterations, which are nothing but matrix products, so every direction of the update moves at the same
            speed. Embeddings, the output head, biases and norm gains are not hidden matrices, and stay on AdamW.
            A fortune a day keeps the debugger away. The best way to predict the future is to train it.
            Simplicity is prerequisite for reliability. Premature optimization is the root of all evil.
            """;

    private final String source;
    private final String text;
    private final char[] vocabulary;
    private final int[] index;
    private final int trainEnd;

    private CharCorpus(String source, String text, int trainEnd) {
        this.source = source;
        this.text = text;
        TreeSet<Character> chars = new TreeSet<>();
        for (int i = 0; i < text.length(); i++) {
            chars.add(text.charAt(i));
        }
        vocabulary = new char[chars.size()];
        int k = 0;
        for (char c : chars) {
            vocabulary[k++] = c;
        }
        index = new int[Character.MAX_VALUE + 1];
        for (int i = 0; i < vocabulary.length; i++) {
            index[vocabulary[i]] = i;
        }
        this.trainEnd = trainEnd;
    }

    /** The first 90 % of {@code text} for training, the rest for validation. */
    private CharCorpus(String source, String text) {
        this(source, text, (int) (text.length() * 0.9));
    }

    /**
     * A corpus whose training and validation texts were split beforehand (by document, as
     * {@code study.GcideCorpus} splits its entries); the vocabulary is every character of both.
     *
     * @param source     where the text came from, in words
     * @param training   the training text
     * @param validation the validation text
     * @return the corpus
     */
    public static CharCorpus split(String source, String training, String validation) {
        return new CharCorpus(source, training + validation, training.length());
    }

    /**
     * Loads the corpus from {@code path} (a file, or a directory whose regular files are read in name order), or
     * from the fortunes package when {@code path} is null, or the embedded text when neither is there.
     *
     * @param path a file or directory, or null
     * @return the corpus
     * @throws DataError if {@code path} is given but does not exist, cannot be read, or holds no text
     */
    static CharCorpus load(Path path) {
        if (path != null) {
            if (!Files.exists(path)) {
                throw new DataError("--data " + path + ": no such file or folder; it must be a text file or a "
                        + "folder of them");
            }
            String text = read(path);
            if (text.isEmpty()) {
                throw new DataError("--data " + path + ": holds no text");
            }
            return new CharCorpus(path.toString(), text);
        }
        Path fortunes = Path.of(FORTUNES_DIR);
        if (Files.isDirectory(fortunes)) {
            String text = read(fortunes);
            if (!text.isEmpty()) {
                return new CharCorpus("Debian fortunes (" + FORTUNES_DIR + ")", text);
            }
        }
        return embedded();
    }

    /**
     * The embedded text, repeated to 20,000 characters.
     *
     * @return the corpus
     */
    static CharCorpus embedded() {
        return new CharCorpus("EMBEDDED TEXT: no corpus found (install Debian's 'fortunes' package, or pass"
                + " --data PATH); losses on it mean nothing", EMBEDDED.repeat(20_000 / EMBEDDED.length() + 1));
    }

    private static String read(Path path) {
        try {
            List<Path> files = new ArrayList<>();
            if (Files.isDirectory(path)) {
                try (Stream<Path> list = Files.list(path)) {
                    // fortune's index files (*.dat) are binary; the *.u8 names are links to the text files.
                    list.filter(p -> Files.isRegularFile(p) && !Files.isSymbolicLink(p))
                            .filter(p -> !p.getFileName().toString().endsWith(".dat"))
                            .sorted().forEach(files::add);
                }
            } else {
                files.add(path);
            }
            StringBuilder text = new StringBuilder();
            for (Path file : files) {
                String content = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
                text.append(content.replace("\r", "").replaceAll("(?m)^%$", ""));
            }
            return text.toString();
        } catch (IOException e) {
            throw new DataError(path + ": cannot read it (" + DataError.reason(e) + ")", e);
        }
    }

    /** Where the text came from, in words. */
    public String source() {
        return source;
    }

    /** Whether this is the embedded fallback rather than a real corpus. */
    boolean isEmbedded() {
        return source.startsWith("EMBEDDED");
    }

    /** The length of the text, in characters, training and validation together. */
    public int length() {
        return text.length();
    }

    /** The number of distinct characters: the model's vocabulary. */
    public int vocabularySize() {
        return vocabulary.length;
    }

    /** The length of the training part, in characters. */
    public int trainLength() {
        return trainEnd;
    }

    /** The length of the validation part, in characters. */
    public int validationLength() {
        return text.length() - trainEnd;
    }

    /**
     * {@code count} windows of {@code context + 1} characters spread evenly over the validation part, the first at
     * its start and the last at its end: the same windows for every run and seed, with no generator involved.
     *
     * @param count   windows, at least 1
     * @param context characters per input
     * @return token ids of shape [count, context + 1] (int64)
     * @throws IllegalArgumentException if the validation part is shorter than one window
     */
    public Tensor evenValidationWindows(int count, int context) {
        int last = text.length() - context - 1;
        if (last < trainEnd) {
            throw new IllegalArgumentException("context " + context + " is longer than the validation text");
        }
        long[] ids = new long[count * (context + 1)];
        for (int w = 0; w < count; w++) {
            int offset = count == 1 ? trainEnd : trainEnd + (int) ((long) (last - trainEnd) * w / (count - 1));
            for (int t = 0; t <= context; t++) {
                ids[w * (context + 1) + t] = index[text.charAt(offset + t)];
            }
        }
        return Tensor.create(ids).view(count, context + 1);
    }

    /**
     * Draws {@code batch} windows of {@code context + 1} characters from the training or validation part.
     *
     * @param random     the generator that picks the windows
     * @param validation whether to draw from the validation part
     * @param batch      windows per batch
     * @param context    characters per input
     * @return token ids of shape [batch, context + 1] (int64): inputs are the first {@code context}, targets the
     *         last {@code context}
     */
    public Tensor batch(Random random, boolean validation, int batch, int context) {
        int start = validation ? trainEnd : 0;
        int span = (validation ? text.length() : trainEnd) - start - context - 1;
        if (span <= 0) {
            throw new IllegalArgumentException("context " + context + " is longer than the "
                    + (validation ? "validation" : "training") + " text");
        }
        long[] ids = new long[batch * (context + 1)];
        for (int b = 0; b < batch; b++) {
            int offset = start + random.nextInt(span);
            for (int t = 0; t <= context; t++) {
                ids[b * (context + 1) + t] = index[text.charAt(offset + t)];
            }
        }
        return Tensor.create(ids).view(batch, context + 1);
    }
}
