package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.DataError;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import java.util.zip.CRC32;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * The studies' reader of a dictd dictionary ({@link GcideCorpus}, {@link FoldocCorpus}): the entries, each cleaned
 * by its dictionary's own rule, split by headword into training and validation text. What is common to the
 * dictionaries is here; what each one's markup needs is its {@link Source#cleaning()}.
 *
 * <p>A dictd dictionary is two files: the text ({@code NAME.dict}, or {@code NAME.dict.dz}, gzip with dictzip's
 * random-access table in the header, which {@link GZIPInputStream} skips) and {@code NAME.index}, one line per
 * headword: the headword, the entry's byte offset and its length, both numbers in dictd's base 64
 * ({@code A-Z a-z 0-9 + /}, most significant digit first). Entries are read through the index, so that each is
 * one document; several headwords that point to one entry count it once, under the first of them in the index.
 * dictd's own header entries (headwords {@code 00-...} and {@code 00database...}) are left out.
 *
 * <p>The split: an entry goes to validation when the CRC-32 of its lower-cased headword is divisible by
 * {@value #VALIDATION_MODULUS} (about a tenth of the entries), so that all senses of a word land on the same side
 * and the split depends on nothing but the file. The vocabulary is byte-level: every byte is one token (the file is
 * read as ISO-8859-1, one character per byte).
 */
final class DictdCorpus {
    /** One entry in this many goes to validation, chosen by the CRC-32 of its headword. */
    static final int VALIDATION_MODULUS = 10;
    private static final String BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    private static final Pattern SPACES = Pattern.compile("[ \\t]{2,}");

    private DictdCorpus() {
    }

    /**
     * A dictionary as a study reads it.
     *
     * @param packageName the Debian package that installs it, such as {@code dict-gcide}
     * @param defaultDict where the package puts the text ({@code dpkg -L}); null for a caller that always names
     *                    the file
     * @param option      the command-line option that names another file, such as {@code --data}
     * @param cleaning    one entry as the file has it to the entry's text, empty if nothing is left
     */
    record Source(String packageName, Path defaultDict, String option, UnaryOperator<String> cleaning) {
        /**
         * Validates the fields.
         *
         * @throws NullPointerException     naming a null field (other than {@code defaultDict})
         * @throws IllegalArgumentException if the option does not start with {@code --}
         */
        Source {
            Objects.requireNonNull(packageName, "packageName must not be null");
            Objects.requireNonNull(cleaning, "cleaning must not be null");
            if (!option.startsWith("--")) {
                throw new IllegalArgumentException("option must start with --, got '" + option + "'");
            }
        }

        /** The command that installs the package. */
        String install() {
            return "apt-get install " + packageName;
        }
    }

    /** One dictionary entry: its headword (the first in the index that points to it) and its cleaned text. */
    record Entry(String headword, String text) {
        /** Whether the entry belongs to the validation text. */
        boolean validation() {
            return isValidation(headword);
        }
    }

    /**
     * Loads and splits the dictionary at {@code dict}, or at the source's default when {@code dict} is null.
     *
     * @param dict   the file the user named: a {@code .dict.dz} or {@code .dict} file with its {@code .index}
     *               beside it, or null for the package's
     * @param source the dictionary's package, option and cleaning
     * @return the corpus, split by headword
     * @throws DataError one line naming the file (and, for the default, the package to install), if a file is
     *                   missing, cannot be read, is damaged, or the split leaves one side empty
     */
    static CharCorpus load(Path dict, Source source) {
        Path file = Objects.requireNonNull(dict == null ? source.defaultDict() : dict,
                "dict must be given when the source has no default");
        String option = dict == null ? "" : source.option() + " ";
        if (!Files.isRegularFile(file)) {
            throw new DataError(dict == null
                    ? "no corpus: " + source.defaultDict() + " is not installed; install it with '"
                            + source.install() + "', or pass " + source.option() + " FILE (a dictd .dict.dz or "
                            + ".dict file with its .index beside it)"
                    : option + file + ": no such file; it must be a dictd .dict.dz or .dict file with its .index "
                            + "beside it (Debian's " + source.packageName() + ": " + source.install() + ")");
        }
        Path index = indexOf(file, option);
        List<Entry> entries = entries(read(file, option, source), readIndex(index, option), file, index, option,
                source.cleaning());
        StringBuilder training = new StringBuilder();
        StringBuilder validation = new StringBuilder();
        int validationEntries = 0;
        for (Entry e : entries) {
            StringBuilder side = e.validation() ? validation : training;
            side.append(e.text()).append("\n\n");
            validationEntries += e.validation() ? 1 : 0;
        }
        if (training.length() == 0 || validation.length() == 0) {
            throw new DataError(option + file + ": its " + entries.size() + " entries give " + validationEntries
                    + " validation entries and " + (entries.size() - validationEntries) + " training entries; "
                    + "the headword split (CRC-32 divisible by " + VALIDATION_MODULUS + ") needs both");
        }
        String described = String.format(Locale.ROOT, "%s (%,d entries: %,d training, %,d validation, split by "
                + "headword)", dict == null ? "Debian " + source.packageName() + ", " + source.defaultDict()
                : file.toString(), entries.size(), entries.size() - validationEntries, validationEntries);
        return CharCorpus.split(described, training.toString(), validation.toString());
    }

    /**
     * Whether an entry of this headword goes to validation: its lower-cased CRC-32 is divisible by
     * {@value #VALIDATION_MODULUS}.
     *
     * @param headword the headword
     * @return true for validation
     */
    static boolean isValidation(String headword) {
        CRC32 crc = new CRC32();
        crc.update(headword.toLowerCase(Locale.ROOT).getBytes(StandardCharsets.ISO_8859_1));
        return crc.getValue() % VALIDATION_MODULUS == 0;
    }

    /** {@code NAME.index} beside {@code NAME.dict} or {@code NAME.dict.dz}. */
    private static Path indexOf(Path dict, String option) {
        String name = dict.getFileName().toString();
        String stem = name.endsWith(".dict.dz") ? name.substring(0, name.length() - ".dict.dz".length())
                : name.endsWith(".dict") ? name.substring(0, name.length() - ".dict".length()) : null;
        if (stem == null || stem.isEmpty()) {
            throw new DataError(option + dict + ": the name must end in .dict.dz or .dict, as a dictd dictionary's "
                    + "text does (its index is NAME.index beside it)");
        }
        Path index = dict.resolveSibling(stem + ".index");
        if (!Files.isRegularFile(index)) {
            throw new DataError(option + dict + ": its index " + index + " is missing; a dictd dictionary is "
                    + "NAME.dict.dz (or NAME.dict) and NAME.index side by side");
        }
        return index;
    }

    /** The dictionary's bytes as ISO-8859-1 text, one character per byte, gunzipped when the file is gzip. */
    private static String read(Path file, String option, Source source) {
        try (InputStream raw = Files.newInputStream(file)) {
            byte[] head = raw.readNBytes(2);
            boolean gzip = head.length == 2 && (head[0] & 0xff) == 0x1f && (head[1] & 0xff) == 0x8b;
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            if (gzip) {
                try (InputStream in = new GZIPInputStream(new java.io.SequenceInputStream(
                        new java.io.ByteArrayInputStream(head), raw))) {
                    in.transferTo(bytes);
                }
            } else {
                bytes.write(head);
                raw.transferTo(bytes);
            }
            return bytes.toString(StandardCharsets.ISO_8859_1);
        } catch (ZipException | java.io.EOFException e) {
            throw new DataError(option + file + ": damaged gzip data (" + DataError.reason(e) + "); reinstall it ("
                    + source.install() + ") or pass another " + source.option(), e);
        } catch (IOException e) {
            throw new DataError(option + file + ": cannot read it (" + DataError.reason(e) + ")", e);
        }
    }

    /** The index's lines, one string each. */
    private static List<String> readIndex(Path index, String option) {
        try {
            return Files.readAllLines(index, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new DataError(option + index + ": cannot read it (" + DataError.reason(e) + ")", e);
        }
    }

    /**
     * The entries the index points to, in the order of the text, cleaned; entries that clean to nothing are left
     * out.
     *
     * @param text      the dictionary text, one character per byte
     * @param index     the index's lines
     * @param dict      the text's file, for messages
     * @param indexFile the index's file, for messages
     * @param option    the option and a space ({@code "--data "}) when the user named the file, for messages
     * @param cleaning  the dictionary's cleaning of one entry
     * @return the entries
     * @throws DataError naming the index line, if a line is malformed or points outside the text
     */
    static List<Entry> entries(String text, List<String> index, Path dict, Path indexFile, String option,
                               UnaryOperator<String> cleaning) {
        // Offset -> headword, the first index line for each entry; sorted by offset = the text's order.
        Map<Long, String> headwords = new TreeMap<>();
        Map<Long, Long> lengths = new LinkedHashMap<>();
        for (int i = 0; i < index.size(); i++) {
            String line = index.get(i);
            if (line.isEmpty()) {
                continue;
            }
            String[] fields = line.split("\t");
            String where = option + indexFile + " line " + (i + 1) + ": ";
            if (fields.length < 3) {
                throw new DataError(where + "has " + fields.length + " tab-separated fields; an index line is "
                        + "headword, offset and length");
            }
            String headword = fields[0];
            if (headword.startsWith("00-") || headword.startsWith("00database")) {
                continue;
            }
            long offset = base64(fields[1], where + "offset");
            long length = base64(fields[2], where + "length");
            if (offset + length > text.length()) {
                throw new DataError(where + "the entry at " + offset + " of length " + length + " ends past the "
                        + "end of " + dict + " (" + text.length() + " bytes): the index is not that file's");
            }
            headwords.putIfAbsent(offset, headword);
            lengths.putIfAbsent(offset, length);
        }
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<Long, String> e : headwords.entrySet()) {
            int start = Math.toIntExact(e.getKey());
            String cleaned = cleaning.apply(text.substring(start, start + Math.toIntExact(lengths.get(e.getKey()))));
            if (!cleaned.isEmpty()) {
                entries.add(new Entry(e.getValue(), cleaned));
            }
        }
        return entries;
    }

    /** A number in dictd's base 64, most significant digit first. */
    private static long base64(String digits, String what) {
        if (digits.isEmpty() || digits.length() > 10) {
            throw new DataError(what + " '" + digits + "' is not a dictd base-64 number (1 to 10 digits of "
                    + "A-Z a-z 0-9 + /)");
        }
        long value = 0;
        for (int i = 0; i < digits.length(); i++) {
            int digit = BASE64.indexOf(digits.charAt(i));
            if (digit < 0) {
                throw new DataError(what + " '" + digits + "' is not a dictd base-64 number (digits A-Z a-z "
                        + "0-9 + /)");
            }
            value = value * 64 + digit;
        }
        return value;
    }

    /**
     * The hard-wrapped lines of each paragraph joined with a space, the paragraphs on lines of their own: each line
     * stripped and its runs of spaces and tabs collapsed to one space, then dropped if {@code drop} says so; a
     * blank line ends a paragraph.
     *
     * @param text the entry's lines, markup already removed, without {@code \r}
     * @param drop which stripped lines to leave out (a dictionary's tag or date lines)
     * @return the paragraphs, empty if nothing is left
     */
    static String joinParagraphs(String text, Predicate<String> drop) {
        StringBuilder out = new StringBuilder();
        StringBuilder paragraph = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            String s = SPACES.matcher(line.strip()).replaceAll(" ");
            if (drop.test(s)) {
                continue;
            }
            if (s.isEmpty()) {
                flush(out, paragraph);
            } else {
                paragraph.append(paragraph.length() == 0 ? "" : " ").append(s);
            }
        }
        flush(out, paragraph);
        return out.toString();
    }

    private static void flush(StringBuilder out, StringBuilder paragraph) {
        if (paragraph.length() > 0) {
            out.append(out.length() == 0 ? "" : "\n").append(paragraph);
            paragraph.setLength(0);
        }
    }
}
