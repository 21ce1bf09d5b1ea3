package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.DataError;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * The text of {@link MuonStudy} and of the second study's GCIDE stages: the entries of a dictd dictionary, by
 * default Debian's {@code dict-gcide} ({@value #DEFAULT_DICT}, the Collaborative International Dictionary of
 * English: Webster's 1913 and WordNet definitions, etymologies and quotations), cleaned of the dictionary's markup
 * and split by headword into training and validation text. {@link DictdCorpus} reads the files and makes the split
 * (CRC-32 of the headword); this class holds what is GCIDE's own, its cleaning.
 *
 * <p>Cleaning, per entry: lines that hold only a bracketed source tag ({@code [1913 Webster]},
 * {@code [WordNet 1.5]}, {@code [PJC]}, ...: a fifth of the file's lines) are dropped, pronunciations between
 * backslashes ({@code \Co*ag"u*late\}) and the braces of cross-references ({@code {Cogent}}) removed, the
 * indentation and runs of spaces collapsed, and the hard-wrapped lines of a paragraph joined with a space; a
 * paragraph ends at a blank line. Entries are separated by a blank line. GCIDE's accent codes
 * ({@code [a^]}, under 1 % of the text) stay. The vocabulary is byte-level; GCIDE's cleaned text has 96 distinct
 * bytes.
 */
final class GcideCorpus {
    /** Where Debian's {@code dict-gcide} puts the dictionary text ({@code dpkg -L dict-gcide}). */
    static final String DEFAULT_DICT = "/usr/share/dictd/gcide.dict.dz";
    /** The Debian package. */
    static final String PACKAGE = "dict-gcide";
    private static final Pattern TAG_LINE = Pattern.compile("\\[[^\\]]*\\]");
    private static final Pattern PRONUNCIATION = Pattern.compile("[ \\t]*\\\\[^\\\\\\n]*\\\\");

    private GcideCorpus() {
    }

    /**
     * Loads and splits the dictionary at {@code dict}, or at {@value #DEFAULT_DICT} when {@code dict} is null.
     *
     * @param dict the {@code --data} option: a {@code .dict.dz} or {@code .dict} file with its {@code .index}
     *             beside it, or null for Debian's {@code dict-gcide}
     * @return the corpus, split by headword
     * @throws DataError one line naming the file (and, for the default, the package to install), if a file is
     *                   missing, cannot be read, is damaged, or the split leaves one side empty
     */
    static CharCorpus load(Path dict) {
        return load(dict, Path.of(DEFAULT_DICT));
    }

    /**
     * {@link #load(Path)} with the default's place given, for tests.
     *
     * @param dict        the {@code --data} option, or null
     * @param defaultDict where the package puts the dictionary
     * @return the corpus
     */
    static CharCorpus load(Path dict, Path defaultDict) {
        return load(dict, defaultDict, "--data");
    }

    /**
     * {@link #load(Path, Path)} for a command whose option naming the file is {@code option}.
     *
     * @param dict        the file the option named, or null
     * @param defaultDict where the package puts the dictionary
     * @param option      the option, such as {@code --gcide}, for messages
     * @return the corpus
     */
    static CharCorpus load(Path dict, Path defaultDict, String option) {
        return DictdCorpus.load(dict, new DictdCorpus.Source(PACKAGE, defaultDict, option, GcideCorpus::clean));
    }

    /**
     * One entry without the dictionary's markup (see the class comment): tag lines dropped, pronunciations and
     * braces removed, the lines of each paragraph joined, paragraphs on lines of their own.
     *
     * @param entry the entry as the dictionary has it
     * @return the cleaned entry, empty if nothing is left
     */
    static String clean(String entry) {
        String text = PRONUNCIATION.matcher(entry).replaceAll("").replace("{", "").replace("}", "")
                .replace("\r", "");
        return DictdCorpus.joinParagraphs(text, line -> TAG_LINE.matcher(line).matches());
    }
}
