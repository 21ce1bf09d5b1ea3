package dev.muon.examples.study;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Rule 10 of the study's protocol: whether Muon needs larger batches, read from the settings that train one model
 * at two or more batch sizes. Per batch size, {@code MuonAdamW}'s mean steps to the target as a fraction of AdamW's
 * (both at their best lrs, each against its own setting's target) and the steps verdict. Five seeds give a test of
 * the difference between two ratios little power, so none is made: Muon is said to gain more at one batch size
 * only if the verdicts differ in that direction (faster at one, not at the other).
 */
final class StudyBatchSize {
    private StudyBatchSize() {
    }

    /** One batch size of a model: MuonAdamW's mean steps to the target over AdamW's, and the verdict. */
    record Point(StudySetting setting, double adamwSteps, double muonSteps, StudyStats.Verdict verdict) {
        double ratio() {
            return muonSteps / adamwSteps;
        }
    }

    /** What rule 10 says of one model. */
    enum Reading {
        /** The verdicts are the same at every batch size. */
        SAME,
        /** The verdict is better for Muon at the largest batch than at the smallest. */
        LARGER_GAINS_MORE,
        /** The verdict is better for Muon at the smallest batch than at the largest. */
        SMALLER_GAINS_MORE
    }

    /**
     * The models with a {@code MuonAdamW} row at two or more batch sizes, each with its points by batch size.
     *
     * @param analyses the settings' analyses
     * @return per model (keyed by a title without the batch size), the points, smallest batch first
     */
    static Map<String, List<Point>> points(List<StudyAnalysis.SettingAnalysis> analyses) {
        Map<String, List<Point>> byModel = new LinkedHashMap<>();
        for (StudyAnalysis.SettingAnalysis a : analyses) {
            if (a.rows().size() < 2 || a.rows().get(1).config().arm() != StudyArm.MUON) {
                continue;
            }
            StudySetting s = a.setting();
            String model = String.format(Locale.ROOT, "d = %d, %d layers, context %d, weight decay %s", s.width(),
                    s.layers(), s.context(), s.weightDecay());
            StudyAnalysis.Row muon = a.rows().get(1);
            byModel.computeIfAbsent(model, k -> new ArrayList<>()).add(new Point(s,
                    a.rows().get(0).stepsInterval().mean(), muon.stepsInterval().mean(), muon.stepsVerdict()));
        }
        byModel.values().removeIf(list -> list.size() < 2);
        byModel.values().forEach(list -> list.sort(Comparator.comparingInt(p -> p.setting().batch())));
        return byModel;
    }

    /**
     * Rule 10's reading of one model's points.
     *
     * @param points the points, smallest batch first
     * @return the reading
     */
    static Reading reading(List<Point> points) {
        int small = rank(points.get(0).verdict());
        int large = rank(points.get(points.size() - 1).verdict());
        return large < small ? Reading.LARGER_GAINS_MORE : large > small ? Reading.SMALLER_GAINS_MORE : Reading.SAME;
    }

    /** Lower is better for Muon. */
    private static int rank(StudyStats.Verdict v) {
        return switch (v) {
            case FASTER -> 0;
            case NO_DIFFERENCE -> 1;
            case SLOWER -> 2;
        };
    }

    /**
     * The report's section, empty if no model ran at two batch sizes.
     *
     * @param analyses the settings' analyses
     * @return the markdown
     */
    static String section(List<StudyAnalysis.SettingAnalysis> analyses) {
        Map<String, List<Point>> models = points(analyses);
        if (models.isEmpty()) {
            return "";
        }
        StringBuilder md = new StringBuilder("\n## Batch size (rule 10)\n\n");
        md.append("MuonAdamW's mean steps to the target as a fraction of AdamW's, both at their best lrs, each batch "
                + "size against its own target; no test of the difference between the ratios is made.\n\n");
        md.append("| model | batch | steps | AdamW steps | MuonAdamW steps | ratio | verdict |\n");
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
        models.forEach((model, points) -> points.forEach(p -> md.append(String.format(Locale.ROOT,
                "| %s | %d | %d | %.0f | %.0f | %.2f | %s |%n", model, p.setting().batch(), p.setting().steps(),
                p.adamwSteps(), p.muonSteps(), p.ratio(), p.verdict()))));
        models.forEach((model, points) -> {
            Point small = points.get(0);
            Point large = points.get(points.size() - 1);
            md.append(String.format(Locale.ROOT, "%n%s: ratio %.2f at batch %d and %.2f at batch %d; ", model,
                    small.ratio(), small.setting().batch(), large.ratio(), large.setting().batch()));
            Reading reading = reading(points);
            if (reading == Reading.SAME) {
                md.append("the verdicts are the same (" + small.verdict() + " at both), so the study does not say "
                        + "that Muon gains more at either batch size.\n");
            } else {
                md.append(String.format(Locale.ROOT, "the verdicts differ (%s at batch %d, %s at batch %d): Muon "
                                + "gains more at the %s batch.%n", small.verdict(), small.setting().batch(),
                        large.verdict(), large.setting().batch(),
                        reading == Reading.LARGER_GAINS_MORE ? "larger" : "smaller"));
            }
        });
        return md.toString();
    }
}
