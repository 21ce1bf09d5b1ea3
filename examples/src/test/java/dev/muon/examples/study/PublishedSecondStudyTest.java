package dev.muon.examples.study;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The second study as published: {@code docs/data/second-study/analysis.md} is exactly what the analysis writes from
 * the committed {@code runs.csv} (and {@code timing.csv}, once the timing pass ran), and every ratio with its
 * interval, every Holm-adjusted p-value and every drift slope with its interval that docs/examples.md's results and
 * the README quote stands in it as the analysis writes it, so the numbers a reader sees come from the code and a
 * quote left behind by a later batch of runs fails here.
 */
class PublishedSecondStudyTest {
    private static final Path DATA = Path.of("..", "docs", "data", "second-study");
    private static final Path EXAMPLES_MD = Path.of("..", "docs", "examples.md");
    private static final Path README = Path.of("..", "README.md");
    private static final String RESULTS = "## The second study: results";
    /** A ratio and its 95 % interval as the analysis writes them: {@code 0.627 (0.597–0.659)}. */
    private static final Pattern RATIO = Pattern.compile("\\d\\.\\d{3} \\(\\d\\.\\d{3}–\\d\\.\\d{3}\\)");
    /** A Holm-adjusted p-value as quoted in prose, {@code Holm p 2.8e-07} or {@code Holm p 0.0764}: the number. */
    private static final Pattern HOLM_P = Pattern.compile("Holm p (\\d\\.\\d+(?:e-\\d+)?)");
    /** A drift slope with its interval as the analysis writes it: {@code +0.1467 (95 % CI +0.1189 to +0.1744)}. */
    private static final Pattern SLOPE =
            Pattern.compile("[+-]\\d\\.\\d{4} \\(95 % CI [+-]\\d\\.\\d{4} to [+-]\\d\\.\\d{4}\\)");

    @Test
    void theCommittedAnalysisIsTheAnalysisOfTheCommittedRuns() throws IOException {
        List<SecondResult> results = SecondCsv.read(DATA.resolve(SecondCsv.FILE)).results();
        String expected = SecondAnalysis.markdown(results, SecondTiming.read(DATA.resolve(SecondTiming.FILE)));
        assertEquals(expected, Files.readString(DATA.resolve(SecondAnalysis.FILE)), DATA.resolve(SecondAnalysis.FILE)
                + " is not the analysis of the runs beside it: run SecondStudy --analyze (docs/examples.md)");
    }

    @Test
    void everyRatioTheResultsQuoteStandsInTheAnalysis() throws IOException {
        String doc = Files.readString(EXAMPLES_MD);
        int start = doc.indexOf(RESULTS);
        assertTrue(start >= 0, EXAMPLES_MD + " has no section '" + RESULTS + "'");
        int end = doc.indexOf("\n## ", start + RESULTS.length());
        assertQuotedFromTheAnalysis(EXAMPLES_MD + "'s results", doc.substring(start, end < 0 ? doc.length() : end));
    }

    @Test
    void everyRatioTheReadmeQuotesStandsInTheAnalysis() throws IOException {
        // The first study's ratios there carry no interval, so every ratio with one is the second study's.
        assertQuotedFromTheAnalysis("the README", Files.readString(README));
    }

    private static void assertQuotedFromTheAnalysis(String where, String markdown) throws IOException {
        String analysis = Files.readString(DATA.resolve(SecondAnalysis.FILE));
        // Prose wraps at any space, so a quote split across two lines is read as one.
        String text = markdown.replaceAll("\\s+", " ");
        int ratios = 0;
        for (Matcher m = RATIO.matcher(text); m.find(); ratios++) {
            assertTrue(analysis.contains(m.group()), "the ratio " + m.group() + " quoted in " + where
                    + " is not in the analysis");
        }
        assertTrue(ratios > 0, "no ratio with its interval is quoted in " + where);
        // In the analysis a Holm p stands in a table cell of its own.
        for (Matcher m = HOLM_P.matcher(text); m.find(); ) {
            assertTrue(analysis.contains("| " + m.group(1) + " |"), "the Holm p " + m.group(1) + " quoted in "
                    + where + " is not in the analysis, as it writes it");
        }
        for (Matcher m = SLOPE.matcher(text); m.find(); ) {
            assertTrue(analysis.contains(m.group()), "the slope " + m.group() + " quoted in " + where
                    + " is not in the analysis");
        }
    }
}
