package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.DataError;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The second study's FOLDOC corpus on a dictionary made on the fly: its cleaning, the split, the errors. */
class FoldocCorpusTest {
    @TempDir
    Path dir;

    /** FOLDOC's {@code *LISP} entry, shortened: two headword lines, a tag, cross-references, a citation, a date. */
    private static final String STAR_LISP = "*LISP\nStarLISP\n\n"
            + "   <language> (StarLISP) A {data-parallel} extension of {Common LISP}\n"
            + "   developed by Cliff Lasser and Steve Omohundro, employees of the\n"
            + "   {Thinking Machines Corporation}.\n"
            + "\n"
            + "   [{Jargon File}]\n"
            + "\n"
            + "   (2014-12-17)\n"
            + "\n";

    @Test
    void clean_removesHeadwordAndDateLines_dropsBraces_keepsTheSubjectTag_andJoinsParagraphs() {
        assertEquals("<language> (StarLISP) A data-parallel extension of Common LISP developed by Cliff Lasser and "
                + "Steve Omohundro, employees of the Thinking Machines Corporation.\n"
                + "[Jargon File]", FoldocCorpus.clean(STAR_LISP));
    }

    /** What the rules do not touch: a date inside a line, indentation runs, a cross-reference over a line break. */
    @Test
    void clean_keepsDatesThatAreNotALineOfTheirOwn_andJoinsACrossReferenceSplitOverLines() {
        String entry = "just-in-time\n\n"
                + "   <compiler>   Compiled at {run time} by a {just\n"
                + "   in time compiler} (2001-06-22 release).\n"
                + "   (1993-12-18).\n\n"
                + "   (2003-05-01)\n";
        assertEquals("<compiler> Compiled at run time by a just in time compiler (2001-06-22 release). (1993-12-18).",
                FoldocCorpus.clean(entry));
    }

    @Test
    void clean_anEntryOfHeadwordLinesOnly_isEmpty() {
        assertEquals("", FoldocCorpus.clean("stack\nLIFO\n"));
        assertEquals("", FoldocCorpus.clean("stack\n\n   (2014-12-17)\n\n"));
    }

    @Test
    void load_splitsByTheHeadwordsCrc_asGcideIs_eachEntryOnce_andTheTextIsClean() throws IOException {
        Path dict = TinyFoldoc.write(dir, "foldoc", 300);
        List<DictdCorpus.Entry> entries = TinyDictionary.entries(dir, "foldoc", "--foldoc ", FoldocCorpus::clean);
        // One entry per definition, the synonyms' index lines included once, under the first name in the index.
        assertEquals(300, entries.size());
        assertEquals("ka", entries.get(0).headword());
        String synonymFirst = TinyFoldoc.synonym(3).toLowerCase(Locale.ROOT);
        String word = TinyDictionary.headword(3).toLowerCase(Locale.ROOT);
        assertEquals(synonymFirst.compareTo(word) < 0 ? synonymFirst : word, entries.get(3).headword());
        for (DictdCorpus.Entry e : entries) {
            assertEquals(DictdCorpus.isValidation(e.headword()), e.validation(), e.headword());
            assertTrue(e.text().startsWith("<"), e.text());
            assertFalse(e.text().contains("{") || e.text().contains("}") || e.text().matches("(?s).*\\(20\\d\\d-.*"),
                    e.text());
            assertEquals(2, e.text().lines().count(), e.text());
        }

        CharCorpus corpus = FoldocCorpus.load(dict, dir.resolve("no-default.dict.dz"), "--foldoc");
        long validation = entries.stream().filter(DictdCorpus.Entry::validation).count();
        int expectedValidation = entries.stream().filter(DictdCorpus.Entry::validation)
                .mapToInt(e -> e.text().length() + 2).sum();
        assertEquals(expectedValidation, corpus.validationLength());
        assertEquals(entries.stream().mapToInt(e -> e.text().length() + 2).sum() - expectedValidation,
                corpus.trainLength());
        assertTrue(corpus.source().startsWith(dict + " (300 entries: " + (300 - validation) + " training, "
                + validation + " validation"), corpus.source());
    }

    static Stream<Arguments> missing() {
        return Stream.of(
                Arguments.of("the package is not installed", null,
                        "no corpus: {DIR}/usr/share/dictd/foldoc.dict.dz is not installed; install it with "
                                + "'apt-get install dict-foldoc', or pass --foldoc FILE (a dictd .dict.dz or .dict "
                                + "file with its .index beside it)"),
                Arguments.of("--foldoc names no file", "other.dict.dz",
                        "--foldoc {DIR}/other.dict.dz: no such file; it must be a dictd .dict.dz or .dict file with "
                                + "its .index beside it (Debian's dict-foldoc: apt-get install dict-foldoc)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("missing")
    void missingFile_isOneLine_namingTheOptionAndThePackage(String what, String named, String expected) {
        Path defaultDict = dir.resolve("usr/share/dictd/foldoc.dict.dz");
        Path dict = named == null ? null : dir.resolve(named);
        DataError e = assertThrows(DataError.class, () -> FoldocCorpus.load(dict, defaultDict, "--foldoc"));
        assertEquals(expected, e.getMessage().replace(dir.toString(), "{DIR}"));
    }

    @Test
    void damagedGzip_namesTheOptionToPassAnotherFile() throws IOException {
        Path dict = TinyFoldoc.write(dir, "foldoc", 50);
        byte[] bytes = Files.readAllBytes(dict);
        Files.write(dict, java.util.Arrays.copyOf(bytes, bytes.length / 2));
        DataError e = assertThrows(DataError.class, () -> FoldocCorpus.load(dict, null, "--foldoc"));
        assertTrue(e.getMessage().startsWith("--foldoc " + dict + ": damaged gzip data")
                && e.getMessage().endsWith("reinstall it (apt-get install dict-foldoc) or pass another --foldoc"),
                e.getMessage());
    }

    /** The package itself, where installed: a B1 run (2,048,000 characters) reads under half its training text. */
    @Test
    void debianFoldoc_whenInstalled_holdsMoreThanTwiceABudgetOfTrainingText() {
        Path installed = Path.of(FoldocCorpus.DEFAULT_DICT);
        assumeTrue(Files.isRegularFile(installed), "dict-foldoc is not installed (apt-get install dict-foldoc)");
        CharCorpus corpus = FoldocCorpus.load(null, installed, "--foldoc");
        assertTrue(corpus.trainLength() > 2 * 2_048_000, corpus.source() + ": " + corpus.trainLength());
        double share = corpus.validationLength() / (double) corpus.length();
        assertTrue(share > 0.08 && share < 0.12, "validation share " + share);
        assertTrue(corpus.source().startsWith("Debian dict-foldoc, " + installed), corpus.source());
    }
}
