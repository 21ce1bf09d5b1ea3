package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.DataError;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The study's corpus loader on a dictionary made on the fly: the cleaning, the split by headword, the errors. */
class GcideCorpusTest {
    @TempDir
    Path dir;

    @Test
    void clean_dropsTagLinesPronunciationsAndBraces_andJoinsParagraphs() {
        String entry = "Coagulate \\Co*ag\"u*late\\, a. [L. coagulatus, fr. {coagulum}.]\n"
                + "   Coagulated. [Obs.] --Shak.\n"
                + "   [1913 Webster]\n"
                + "\n"
                + "   Syn: To thicken;   curdle.\n"
                + "        [WordNet 1.5 +PJC]\n";
        assertEquals("Coagulate, a. [L. coagulatus, fr. coagulum.] Coagulated. [Obs.] --Shak.\n"
                + "Syn: To thicken; curdle.", GcideCorpus.clean(entry));
        assertEquals("", GcideCorpus.clean("   [1913 Webster]\n\n"));
    }

    @Test
    void load_splitsByHeadword_everySenseOnOneSide_andTheTextIsClean() throws IOException {
        Path dict = TinyDictionary.write(dir, "tiny", 300);
        List<DictdCorpus.Entry> entries = TinyDictionary.entries(dir, "tiny", "--data ", GcideCorpus::clean);
        // The header entry is left out; every generated entry is there once, in the text's order.
        assertEquals(300, entries.size());
        assertEquals(TinyDictionary.headword(0), entries.get(0).headword());
        assertEquals(TinyDictionary.headword(299), entries.get(299).headword());
        long validation = entries.stream().filter(DictdCorpus.Entry::validation).count();
        assertTrue(validation > 10 && validation < 60, validation + " of 300 entries in validation");

        CharCorpus corpus = GcideCorpus.load(dict, dir.resolve("no-default.dict.dz"));
        StringBuilder expectedTraining = new StringBuilder();
        StringBuilder expectedValidation = new StringBuilder();
        for (DictdCorpus.Entry e : entries) {
            (e.validation() ? expectedValidation : expectedTraining).append(e.text()).append("\n\n");
        }
        assertEquals(expectedTraining.length(), corpus.trainLength());
        assertEquals(expectedValidation.length(), corpus.validationLength());
        assertTrue(corpus.source().contains("300 entries") && corpus.source().contains(validation + " validation"),
                corpus.source());
        String all = expectedTraining + expectedValidation.toString();
        assertFalse(all.contains("[1913 Webster]") || all.contains("\\") || all.contains("{"), all);
        // Byte-level: the vocabulary is the distinct bytes of the cleaned text.
        assertEquals(all.chars().distinct().count(), corpus.vocabularySize());
    }

    @Test
    void isValidation_isTheHeadwordsCrc_caseBlind() {
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update("lash".getBytes(StandardCharsets.ISO_8859_1));
        boolean expected = crc.getValue() % 10 == 0;
        assertEquals(expected, DictdCorpus.isValidation("Lash"));
        assertEquals(expected, DictdCorpus.isValidation("LASH"));
        long inValidation = java.util.stream.IntStream.range(0, 2000)
                .filter(i -> DictdCorpus.isValidation(TinyDictionary.headword(i))).count();
        assertTrue(inValidation > 150 && inValidation < 250, inValidation + " of 2000");
    }

    @Test
    void evenValidationWindows_spanTheValidationText_fromItsStartToItsEnd() throws IOException {
        CharCorpus corpus = GcideCorpus.load(TinyDictionary.write(dir, "tiny", 300), null);
        try (PointerScope scope = new PointerScope()) {
            Tensor windows = corpus.evenValidationWindows(5, 16);
            assertEquals(List.of(5L, 17L), Arrays.stream(windows.sizes().vec().get()).boxed().toList());
            // The same call gives the same windows: no generator is involved.
            assertTrue(windows.equal(corpus.evenValidationWindows(5, 16)));
            assertFalse(windows.select(0, 0).equal(windows.select(0, 4)));
        }
    }

    /** A dictionary broken one way per row; the message each must give. */
    interface Breakage {
        Path apply(Path dir) throws IOException;
    }

    static Stream<Arguments> badData() {
        return Stream.of(
                Arguments.of("no such file", (Breakage) d -> d.resolve("missing.dict.dz"),
                        "--data {DIR}/missing.dict.dz: no such file; it must be a dictd .dict.dz or .dict file"),
                Arguments.of("not a dictd name", (Breakage) d -> {
                    Path p = d.resolve("words.txt");
                    Files.writeString(p, "some text");
                    return p;
                }, "--data {DIR}/words.txt: the name must end in .dict.dz or .dict"),
                Arguments.of("index missing", (Breakage) d -> {
                    Path p = TinyDictionary.write(d, "tiny", 50);
                    Files.delete(d.resolve("tiny.index"));
                    return p;
                }, "--data {DIR}/tiny.dict.dz: its index {DIR}/tiny.index is missing"),
                Arguments.of("truncated gzip", (Breakage) d -> {
                    Path p = TinyDictionary.write(d, "tiny", 50);
                    byte[] bytes = Files.readAllBytes(p);
                    Files.write(p, Arrays.copyOf(bytes, bytes.length / 2));
                    return p;
                }, "--data {DIR}/tiny.dict.dz: damaged gzip data"),
                Arguments.of("index line with two fields", (Breakage) d -> TinyDictionary.write(d, "tiny",
                        "Word \\Word\\, n. A word.\n".getBytes(StandardCharsets.ISO_8859_1), "Word\tA\n"),
                        "--data {DIR}/tiny.index line 1: has 2 tab-separated fields"),
                Arguments.of("offset not base 64", (Breakage) d -> TinyDictionary.write(d, "tiny",
                        "Word \\Word\\, n. A word.\n".getBytes(StandardCharsets.ISO_8859_1), "Word\tA!\tB\n"),
                        "--data {DIR}/tiny.index line 1: offset 'A!' is not a dictd base-64 number"),
                Arguments.of("entry past the end", (Breakage) d -> TinyDictionary.write(d, "tiny",
                        "Word \\Word\\, n. A word.\n".getBytes(StandardCharsets.ISO_8859_1), "Word\tA\tBA\n"),
                        "--data {DIR}/tiny.index line 1: the entry at 0 of length 64 ends past the end"),
                Arguments.of("one side empty", (Breakage) d -> TinyDictionary.write(d, "tiny",
                        "Word \\Word\\, n. A word.\n".getBytes(StandardCharsets.ISO_8859_1), "Word\tA\tY\n"),
                        "--data {DIR}/tiny.dict.dz: its 1 entries give"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badData")
    void badData_isOneDataError_namingTheFileAndTheRule(String what, Breakage breakage, String expected)
            throws IOException {
        Path data = breakage.apply(dir);
        DataError e = assertThrows(DataError.class, () -> GcideCorpus.load(data, dir.resolve("default.dict.dz")));
        String message = e.getMessage().replace(dir.toString(), "{DIR}");
        assertTrue(message.startsWith(expected), message);
        assertFalse(message.contains("\n"), message);
    }

    @Test
    void noPackage_andNoData_namesTheInstallCommandAndTheOption() {
        Path missing = dir.resolve("usr/share/dictd/gcide.dict.dz");
        DataError e = assertThrows(DataError.class, () -> GcideCorpus.load(null, missing));
        assertEquals("no corpus: " + missing + " is not installed; install it with 'apt-get install dict-gcide', "
                + "or pass --data FILE (a dictd .dict.dz or .dict file with its .index beside it)", e.getMessage());
    }

    @Test
    void explicitData_thatIsMissing_neverFallsBackToTheInstalledPackage() throws IOException {
        Path installed = TinyDictionary.write(dir, "installed", 100);
        Path missing = dir.resolve("other.dict.dz");
        DataError e = assertThrows(DataError.class, () -> GcideCorpus.load(missing, installed));
        assertTrue(e.getMessage().startsWith("--data " + missing + ": no such file"), e.getMessage());
    }

    /** The package itself, where it is installed: its size and vocabulary as docs/examples.md states them. */
    @Test
    void debianGcide_whenInstalled_loadsWithTheStatedSizes() {
        assumeTrue(Files.isRegularFile(Path.of(GcideCorpus.DEFAULT_DICT)),
                "dict-gcide is not installed (apt-get install dict-gcide)");
        CharCorpus corpus = GcideCorpus.load(null);
        assertEquals(96, corpus.vocabularySize());
        assertTrue(corpus.length() > 28_000_000 && corpus.length() < 31_000_000, corpus.source());
        double share = corpus.validationLength() / (double) corpus.length();
        assertTrue(share > 0.08 && share < 0.12, "validation share " + share);
    }
}
