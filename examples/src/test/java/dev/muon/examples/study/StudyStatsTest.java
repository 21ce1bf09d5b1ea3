package dev.muon.examples.study;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The protocol's statistics against known values: Student's t quantiles and CDF from the tables (reference
 * values computed with SciPy 1.17's {@code scipy.stats.t}), the closed forms for 1 and 2 degrees of freedom, and
 * Welch's test on the two worked examples of Wikipedia's "Welch's t-test" article (reference values from SciPy's
 * {@code ttest_ind(a, b, equal_var=False)}), and the paired test against the closed form for 2 degrees of freedom and
 * SciPy's {@code ttest_rel(a, b)}.
 */
class StudyStatsTest {
    @ParameterizedTest
    @CsvSource({
        "0.975, 1, 12.706204736174694",
        "0.975, 2, 4.302652729749462",
        "0.975, 4, 2.7764451051977934",
        "0.975, 5, 2.5705818356363146",
        "0.975, 8, 2.306004135204166",
        "0.975, 9.5, 2.2441374614922958",
        "0.975, 30, 2.0422724563012378",
        "0.975, 1000, 1.9623390808264083",
        "0.995, 3, 5.840909309733355",
        "0.9, 12, 1.356217334023205",
        "0.025, 4, -2.7764451051977934"})
    void tQuantile_matchesTheTables(double p, double df, double expected) {
        assertEquals(expected, StudyStats.tQuantile(p, df), 1e-9);
    }

    @ParameterizedTest
    @CsvSource({
        "-2.0, 1",
        "0.7, 1",
        "-2.0, 2",
        "3.1, 2"})
    void tCdf_matchesTheClosedForms(double t, double df) {
        // df 1 is Cauchy's: 1/2 + atan(t)/π; df 2: 1/2 + t / (2·√(2 + t²)).
        double expected = df == 1 ? 0.5 + Math.atan(t) / Math.PI : 0.5 + t / (2 * Math.sqrt(2 + t * t));
        assertEquals(expected, StudyStats.tCdf(t, df), 1e-12);
    }

    @ParameterizedTest
    @CsvSource({
        "1.5, 7, 0.911350756505015",
        "-0.3, 2.5, 0.39367118574759863",
        "-2.0, 30, 0.027312522481491547"})
    void tCdf_matchesScipy(double t, double df, double expected) {
        assertEquals(expected, StudyStats.tCdf(t, df), 1e-11);
    }

    @Test
    void welch_wikipediaExample1() {
        double[] a1 = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
        double[] a2 = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
        assertWelch(a1, a2, -2.455356398286006, 24.988529290231416, 0.021378001462866992);
        assertEquals(StudyStats.Verdict.FASTER, StudyStats.verdict(a1, a2));
        assertEquals(StudyStats.Verdict.SLOWER, StudyStats.verdict(a2, a1));
    }

    @Test
    void welch_wikipediaExample2_unequalSizes_isNotSignificant() {
        double[] a1 = {17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8};
        double[] a2 = {21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6, 21.5,
            22.5, 23.5, 21.5, 21.8};
        assertWelch(a1, a2, -1.5654335235985037, 9.904741248650831, 0.14884169660532817);
        assertEquals(StudyStats.Verdict.NO_DIFFERENCE, StudyStats.verdict(a1, a2));
    }

    /** Welch's test of two samples against SciPy's t, degrees of freedom and two-sided p. */
    private static void assertWelch(double[] a, double[] b, double t, double df, double p) {
        StudyStats.Welch w = StudyStats.welch(a, b);
        assertEquals(t, w.t(), 1e-10);
        assertEquals(df, w.df(), 1e-9);
        assertEquals(p, w.p(), 1e-10);
    }

    @Test
    void welch_constantSamples_equalMeansGiveNoDifference_differentMeansADecision() {
        double[] censored = {1000, 1000, 1000};
        assertEquals(1.0, StudyStats.welch(censored, censored.clone()).p());
        assertEquals(StudyStats.Verdict.NO_DIFFERENCE, StudyStats.verdict(censored, censored.clone()));
        assertEquals(StudyStats.Verdict.FASTER, StudyStats.verdict(new double[] {900, 900}, censored));
    }

    @Test
    void welch_tooFewValues_isRejected_andTheVerdictIsNoDifference() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StudyStats.welch(new double[] {1}, new double[] {1, 2}));
        assertEquals("Welch's test needs at least 2 values in each sample, got 1 and 2", e.getMessage());
        assertEquals(StudyStats.Verdict.NO_DIFFERENCE, StudyStats.verdict(new double[] {1}, new double[] {5, 6}));
    }

    @Test
    void interval_isTheMeanPlusMinusTTimesTheStandardError() {
        StudyStats.Interval i = StudyStats.interval(new double[] {1, 2, 3, 4, 5});
        assertEquals(3.0, i.mean(), 1e-15);
        assertEquals(Math.sqrt(2.5), i.sd(), 1e-15);
        assertEquals(1.9632431614775572, i.halfWidth(), 1e-9);
        assertEquals(3 - 1.9632431614775572, i.low(), 1e-9);
        assertEquals(Double.NaN, StudyStats.interval(new double[] {7}).halfWidth());
    }

    @Test
    void tQuantile_outsideItsDomain_isRejected() {
        assertThrows(IllegalArgumentException.class, () -> StudyStats.tQuantile(1.0, 4));
        assertThrows(IllegalArgumentException.class, () -> StudyStats.tQuantile(0.5, 0));
    }

    @Test
    void paired_ofThreeDifferences_matchesTheClosedFormForTwoDegreesOfFreedom() {
        // Differences 1, 2, 3: mean 2, sd 1, t = 2·√3 with 2 df; P(T ≤ t) = 1/2 + t / (2·√(t² + 2)), so the
        // two-sided p is 1 − √(12/14).
        StudyStats.Paired p = StudyStats.paired(new double[] {5, 7, 9}, new double[] {4, 5, 6});
        assertEquals(2, p.difference().mean(), 1e-12);
        assertEquals(1, p.difference().sd(), 1e-12);
        assertEquals(4.302652729749462 / Math.sqrt(3), p.difference().halfWidth(), 1e-9);
        assertEquals(2 * Math.sqrt(3), p.t(), 1e-12);
        assertEquals(1 - Math.sqrt(12.0 / 14), p.p(), 1e-12);
        assertEquals(0, p.lower());
    }

    @Test
    void paired_matchesSciPysTtestRel_andCountsThePairsWhereTheFirstIsLower() {
        StudyStats.Paired p = StudyStats.paired(new double[] {10, 12, 9, 14, 11}, new double[] {11, 15, 10, 14.5, 13});
        assertEquals(-3.3541019662496847, p.t(), 1e-12);
        assertEquals(0.028460203254338342, p.p(), 1e-12);
        assertEquals(5, p.lower());
    }

    @Test
    void paired_ofEqualDifferences_isCertain_andOfNoDifferences_isNot() {
        StudyStats.Paired same = StudyStats.paired(new double[] {1, 2, 3}, new double[] {1, 2, 3});
        assertEquals(1, same.p());
        assertEquals(0, same.lower());
        StudyStats.Paired shifted = StudyStats.paired(new double[] {0, 1, 2}, new double[] {1, 2, 3});
        assertEquals(0, shifted.p());
        assertEquals(Double.NEGATIVE_INFINITY, shifted.t());
        assertEquals(3, shifted.lower());
    }

    @Test
    void paired_ofSamplesOfOtherLengths_orOnePair_isRejected() {
        assertThrows(IllegalArgumentException.class,
                () -> StudyStats.paired(new double[] {1, 2, 3}, new double[] {1, 2}));
        assertThrows(IllegalArgumentException.class, () -> StudyStats.paired(new double[] {1}, new double[] {2}));
    }
}
