package dev.muon.examples.study;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;
import java.util.zip.GZIPOutputStream;

/**
 * A small dictd dictionary in GCIDE's layout, made on the fly for tests: {@code NAME.dict.dz} (gzip) and
 * {@code NAME.index}, with pronunciations, cross-references in braces and source-tag lines to clean away.
 */
final class TinyDictionary {
    private static final String BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    private static final String[] SYLLABLES = {"ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "pi", "nu",
        "qua", "ber"};
    private static final String[] GLOSSES = {"a small vessel for carrying water", "the act of turning about",
        "a kind of bird of the marshes", "to bind with a cord or rope", "the quality of being bright",
        "one who keeps the accounts", "a song sung at evening", "to strike with a whip"};

    private TinyDictionary() {
    }

    /** The headword of entry {@code i}: made of syllables, distinct for every i. */
    static String headword(int i) {
        StringBuilder w = new StringBuilder();
        int n = i;
        do {
            w.append(SYLLABLES[n % SYLLABLES.length]);
            n /= SYLLABLES.length;
        } while (n > 0);
        return Character.toUpperCase(w.charAt(0)) + w.substring(1);
    }

    /** Entry {@code i} as GCIDE writes one: headword line with a pronunciation, senses, a tag line. */
    static String entry(int i, Random random) {
        String word = headword(i);
        return word + " \\" + word.replace("a", "a*") + "\\, n. [L. " + word.toLowerCase() + "us.]\n"
                + "   1. " + GLOSSES[random.nextInt(GLOSSES.length)] + "; as, the " + word.toLowerCase()
                + " of the\n      river. See {" + headword(i + 1) + "}.\n"
                + "      [1913 Webster]\n\n"
                + "   2. " + GLOSSES[random.nextInt(GLOSSES.length)] + ".\n"
                + "      [WordNet 1.5]\n";
    }

    /**
     * Writes a dictionary of {@code entries} entries (plus dictd's header entries) into {@code dir}.
     *
     * @param dir     the folder
     * @param name    the dictionary's name: the files are NAME.dict.dz and NAME.index
     * @param entries how many entries
     * @return the {@code .dict.dz} file
     * @throws IOException if a file cannot be written
     */
    static Path write(Path dir, String name, int entries) throws IOException {
        Random random = new Random(7);
        return write(dir, name, "\n00-database-short\n   A tiny dictionary made by a test\n", entries,
                i -> entry(i, random), i -> List.of(headword(i)));
    }

    /**
     * Writes a dictionary of a header entry and {@code entries} entries into {@code dir}, in the text's order, each
     * under its names in the index (sorted, as dictd's is); GCIDE's layout and FOLDOC's ({@link TinyFoldoc}) differ
     * only in the entries and their names.
     *
     * @param dir     the folder
     * @param name    the dictionary's name: the files are NAME.dict.dz and NAME.index
     * @param header  dictd's {@code 00-database-short} entry
     * @param entries how many entries
     * @param entry   entry {@code i}'s text, asked once for each i in order
     * @param names   entry {@code i}'s index names
     * @return the {@code .dict.dz} file
     * @throws IOException if a file cannot be written
     */
    static Path write(Path dir, String name, String header, int entries, IntFunction<String> entry,
                      IntFunction<List<String>> names) throws IOException {
        StringBuilder text = new StringBuilder();
        List<String> index = new ArrayList<>();
        index.add("00-database-short\t" + base64(0) + "\t" + base64(header.length()));
        text.append(header);
        for (int i = 0; i < entries; i++) {
            String e = entry.apply(i);
            String where = "\t" + base64(text.length()) + "\t" + base64(e.length());
            for (String n : names.apply(i)) {
                index.add(n + where);
            }
            text.append(e);
        }
        index.sort(null);
        return write(dir, name, text.toString().getBytes(StandardCharsets.ISO_8859_1), String.join("\n", index)
                + "\n");
    }

    /**
     * Writes a dictionary's two files as given.
     *
     * @param dir   the folder
     * @param name  the dictionary's name
     * @param text  the text, gzipped into NAME.dict.dz
     * @param index the index's content
     * @return the {@code .dict.dz} file
     * @throws IOException if a file cannot be written
     */
    static Path write(Path dir, String name, byte[] text, String index) throws IOException {
        Path dict = dir.resolve(name + ".dict.dz");
        Files.write(dict, gzip(text));
        Files.writeString(dir.resolve(name + ".index"), index, StandardCharsets.ISO_8859_1);
        return dict;
    }

    /**
     * The entries of a dictionary written here, as {@link DictdCorpus#entries} reads them from its two files.
     *
     * @param dir      the folder
     * @param name     the dictionary's name
     * @param option   the option and a space, for messages
     * @param cleaning the dictionary's cleaning of one entry
     * @return the entries, in the text's order
     * @throws IOException if a file cannot be read
     */
    static List<DictdCorpus.Entry> entries(Path dir, String name, String option, UnaryOperator<String> cleaning)
            throws IOException {
        Path dict = dir.resolve(name + ".dict.dz");
        Path index = dir.resolve(name + ".index");
        String text = new String(gzipped(dict), StandardCharsets.ISO_8859_1);
        return DictdCorpus.entries(text, Files.readAllLines(index, StandardCharsets.ISO_8859_1), dict, index, option,
                cleaning);
    }

    /** The uncompressed bytes of a {@code .dict.dz} file. */
    static byte[] gzipped(Path dict) throws IOException {
        try (java.io.InputStream in = new java.util.zip.GZIPInputStream(Files.newInputStream(dict))) {
            return in.readAllBytes();
        }
    }

    static byte[] gzip(byte[] data) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (OutputStream out = new GZIPOutputStream(bytes)) {
            out.write(data);
        }
        return bytes.toByteArray();
    }

    /** A number in dictd's base 64. */
    static String base64(long value) {
        if (value == 0) {
            return "A";
        }
        StringBuilder digits = new StringBuilder();
        for (long v = value; v > 0; v /= 64) {
            digits.insert(0, BASE64.charAt((int) (v % 64)));
        }
        return digits.toString();
    }
}
