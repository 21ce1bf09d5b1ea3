package dev.muon;

import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The text form of {@link MuonConfig} and {@link AdamWConfig} inside a checkpoint: {@code key=value} lines,
 * doubles in Java's shortest round-trip form, so that a config comes back bit for bit. Used by
 * {@link Checkpoint} only.
 */
final class ConfigText {
    private ConfigText() {
    }

    static String of(MuonConfig c) {
        CoefficientSchedule ns = c.nsCoefficients();
        StringBuilder triples = new StringBuilder();
        for (Coefficients t : ns.coefficients()) {
            if (triples.length() > 0) {
                triples.append(';');
            }
            triples.append(t.a()).append(',').append(t.b()).append(',').append(t.c());
        }
        return "lr=" + c.lr() + "\nweightDecay=" + c.weightDecay() + "\nmomentum=" + c.momentum()
                + "\nnesterov=" + c.nesterov() + "\nnsCoefficients.name=" + ns.name()
                + "\nnsCoefficients.triples=" + triples + "\nnsCoefficients.repeating=" + ns.repeating()
                + "\nnsCoefficients.normalizationSafety=" + ns.normalizationSafety() + "\neps=" + c.eps()
                + "\nnsSteps=" + c.nsSteps() + "\nadjustLr=" + c.adjustLr() + "\nextraScale=" + c.extraScale()
                + "\nnsPrecision=" + c.nsPrecision() + "\nconvWeights=" + c.convWeights()
                + "\nstackedWeights=" + c.stackedWeights() + "\northogonalization=" + c.orthogonalization()
                + "\nnsAlgorithm=" + c.nsAlgorithm() + "\nbatchSameShape=" + c.batchSameShape() + "\n";
    }

    static String of(AdamWConfig c) {
        return "lr=" + c.lr() + "\nbeta1=" + c.beta1() + "\nbeta2=" + c.beta2() + "\neps=" + c.eps()
                + "\nweightDecay=" + c.weightDecay() + "\n";
    }

    /** @throws IllegalArgumentException if a key is missing or a value does not parse or validate */
    static MuonConfig muonConfig(String text) {
        Map<String, String> m = parse(text);
        List<Coefficients> triples = new ArrayList<>();
        for (String t : get(m, "nsCoefficients.triples").split(";")) {
            String[] abc = t.split(",");
            if (abc.length != 3) {
                throw new IllegalArgumentException("nsCoefficients.triples must hold a,b,c triples, got " + t);
            }
            triples.add(new Coefficients(Double.parseDouble(abc[0]), Double.parseDouble(abc[1]),
                    Double.parseDouble(abc[2])));
        }
        CoefficientSchedule ns = new CoefficientSchedule(get(m, "nsCoefficients.name"), triples,
                Boolean.parseBoolean(get(m, "nsCoefficients.repeating")),
                Double.parseDouble(get(m, "nsCoefficients.normalizationSafety")));
        return new MuonConfig(number(m, "lr"), number(m, "weightDecay"), number(m, "momentum"),
                Boolean.parseBoolean(get(m, "nesterov")), ns, number(m, "eps"),
                Integer.parseInt(get(m, "nsSteps")), AdjustLr.valueOf(get(m, "adjustLr")),
                number(m, "extraScale"), NsPrecision.valueOf(get(m, "nsPrecision")),
                ConvWeights.valueOf(get(m, "convWeights")), StackedWeights.valueOf(get(m, "stackedWeights")),
                Orthogonalization.valueOf(get(m, "orthogonalization")), NsAlgorithm.valueOf(get(m, "nsAlgorithm")),
                // Stored because a load restores the whole saved config: without the key a load would turn
                // batching back on in a run that had turned it off. Checkpoints from before the switch lack it and
                // get the default, which changes their continuation only by the rounding of batched products.
                Boolean.parseBoolean(m.getOrDefault("batchSameShape", "true")));
    }

    /** @throws IllegalArgumentException if a key is missing or a value does not parse or validate */
    static AdamWConfig adamWConfig(String text) {
        Map<String, String> m = parse(text);
        return new AdamWConfig(number(m, "lr"), number(m, "beta1"), number(m, "beta2"), number(m, "eps"),
                number(m, "weightDecay"));
    }

    private static Map<String, String> parse(String text) {
        Map<String, String> map = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                map.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return map;
    }

    private static String get(Map<String, String> m, String key) {
        String value = m.get(key);
        if (value == null) {
            throw new IllegalArgumentException("config key '" + key + "' is missing");
        }
        return value;
    }

    private static double number(Map<String, String> m, String key) {
        return Double.parseDouble(get(m, key));
    }
}
