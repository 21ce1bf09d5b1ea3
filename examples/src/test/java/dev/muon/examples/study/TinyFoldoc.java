package dev.muon.examples.study;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

/**
 * A small dictd dictionary in FOLDOC's layout, made on the fly for tests: headword lines (a headword and, for every
 * third entry, a synonym, both in the index), a blank line, indented paragraphs with a {@code <subject>} tag and
 * cross-references in braces, wrapped over several lines, and a date line.
 */
final class TinyFoldoc {
    private static final String[] SUBJECTS = {"programming", "networking", "hardware", "language", "jargon"};
    private static final String[] GLOSSES = {"a data structure for storing items which are accessed in",
        "a protocol used by hosts on a network to exchange", "a program that translates source code written in",
        "the part of a processor which carries out", "an informal term for a piece of software that"};

    private TinyFoldoc() {
    }

    /** The synonym of entry {@code i}, which has one when {@code i} is divisible by 3. */
    static String synonym(int i) {
        return TinyDictionary.headword(i).toUpperCase(java.util.Locale.ROOT) + "-" + i;
    }

    /** Entry {@code i} as FOLDOC writes one. */
    static String entry(int i, Random random) {
        String word = TinyDictionary.headword(i);
        return word + "\n" + (i % 3 == 0 ? synonym(i) + "\n" : "")
                + "\n"
                + "   <" + SUBJECTS[random.nextInt(SUBJECTS.length)] + "> (" + word.toLowerCase() + ") "
                + GLOSSES[random.nextInt(GLOSSES.length)] + "\n"
                + "   the {" + TinyDictionary.headword(i + 1) + "}, as {" + TinyDictionary.headword(i + 2) + "\n"
                + "   (" + TinyDictionary.headword(i + 2).toLowerCase() + ".html)} does.\n"
                + "\n"
                + "   See also {" + TinyDictionary.headword(i + 3) + "}.\n"
                + "\n"
                + "   (20" + (10 + i % 14) + "-0" + (1 + i % 9) + "-1" + (i % 10) + ")\n"
                + "\n";
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
        Random random = new Random(11);
        return TinyDictionary.write(dir, name, "\n00-database-short\n     A tiny FOLDOC made by a test\n", entries,
                i -> entry(i, random), i -> {
                    String word = TinyDictionary.headword(i).toLowerCase(java.util.Locale.ROOT);
                    return i % 3 == 0 ? List.of(word, synonym(i).toLowerCase(java.util.Locale.ROOT)) : List.of(word);
                });
    }
}
