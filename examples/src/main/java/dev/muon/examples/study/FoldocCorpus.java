package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.DataError;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * The second study's second corpus (docs/examples.md, "The second corpus: Debian's {@code dict-foldoc}"): the Free
 * On-line Dictionary of Computing, Debian's {@code dict-foldoc} ({@value #DEFAULT_DICT}), read and split by headword
 * as GCIDE is ({@link DictdCorpus}), with FOLDOC's own cleaning.
 *
 * <p>A FOLDOC entry is its headword lines (the headword and its synonyms, one a line, not indented), a blank line,
 * then indented paragraphs: a {@code <subject>} tag at the start of the first, cross-references in braces
 * ({@code {stack}}), and a last line that holds the date of the entry's last change, {@code (2014-12-17)}. Cleaning,
 * per entry: the lines before the first blank line (the headword lines) and the lines that hold only a date
 * {@code (YYYY-MM-DD)} are removed, every brace is dropped, the {@code <subject>} tags stay, and the hard-wrapped lines
 * of a paragraph are joined as GCIDE's are ({@link DictdCorpus#joinParagraphs}: indentation and runs of spaces
 * collapsed, a paragraph ends at a blank line).
 *
 * <p>Braces: the file writes a cross-reference as {@code {name}} and has no escape for a literal brace, so the few
 * literal ones (the entry for {@code "{"}, C code in a handful of entries) go with the cross-references' braces.
 * FOLDOC's text is UTF-8; the byte-level vocabulary takes its multi-byte characters as two or three tokens.
 */
final class FoldocCorpus {
    /** Where Debian's {@code dict-foldoc} puts the dictionary text ({@code dpkg -L dict-foldoc}). */
    static final String DEFAULT_DICT = "/usr/share/dictd/foldoc.dict.dz";
    /** The Debian package. */
    static final String PACKAGE = "dict-foldoc";
    /** A line that holds only the date of the entry's last change. */
    private static final Pattern DATE_LINE = Pattern.compile("\\(\\d{4}-\\d{2}-\\d{2}\\)");

    private FoldocCorpus() {
    }

    /**
     * Loads and splits the dictionary at {@code dict}, or at {@code defaultDict} when {@code dict} is null.
     *
     * @param dict        the file the option named: a {@code .dict.dz} or {@code .dict} file with its
     *                    {@code .index} beside it, or null for the package's
     * @param defaultDict where the package puts the dictionary ({@value #DEFAULT_DICT}; another place in tests)
     * @param option      the option that names the file, such as {@code --foldoc}, for messages
     * @return the corpus, split by headword
     * @throws DataError one line naming the file (and, for the default, the package to install), if a file is
     *                   missing, cannot be read, is damaged, or the split leaves one side empty
     */
    static CharCorpus load(Path dict, Path defaultDict, String option) {
        return DictdCorpus.load(dict, new DictdCorpus.Source(PACKAGE, defaultDict, option, FoldocCorpus::clean));
    }

    /**
     * One entry without the dictionary's markup (see the class comment): headword and date lines removed, braces
     * dropped, the lines of each paragraph joined, paragraphs on lines of their own.
     *
     * @param entry the entry as the dictionary has it
     * @return the cleaned entry, empty if nothing is left
     */
    static String clean(String entry) {
        String text = entry.replace("\r", "");
        String[] lines = text.split("\n", -1);
        int body = 0;
        while (body < lines.length && !lines[body].isBlank()) {
            body++;
        }
        String rest = String.join("\n", java.util.Arrays.asList(lines).subList(body, lines.length))
                .replace("{", "").replace("}", "");
        return DictdCorpus.joinParagraphs(rest, line -> DATE_LINE.matcher(line).matches());
    }
}
