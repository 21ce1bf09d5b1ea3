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
 * the committed {@code runs.csv} (and {@code timing.csv}, once the timing pass ran), and every steps ratio with its
 * interval that docs/examples.md's results and the README quote stands in it, so the numbers a reader sees come
 * from the code.
 */
class PublishedSecondStudyTest {
    private static final Path DATA = Path.of("..", "docs", "data", "second-study");
    private static final Path EXAMPLES_MD = Path.of("..", "docs", "examples.md");
    private static final Path README = Path.of("..", "README.md");
    private static final String RESULTS = "## The second study: results";
    /** A ratio and its 95 % interval as the analysis writes them: {@code 0.627 (0.597–0.659)}. */
    private static final Pattern RATIO = Pattern.compile("\\d\\.\\d{3} \\(\\d\\.\\d{3}–\\d\\.\\d{3}\\)");

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

    private static void assertQuotedFromTheAnalysis(String where, String text) throws IOException {
        String analysis = Files.readString(DATA.resolve(SecondAnalysis.FILE));
        Matcher m = RATIO.matcher(text);
        int quoted = 0;
        while (m.find()) {
            assertTrue(analysis.contains(m.group()), "the ratio " + m.group() + " quoted in " + where
                    + " is not in the analysis");
            quoted++;
        }
        assertTrue(quoted > 0, "no ratio with its interval is quoted in " + where);
    }
}
