package dev.muon;

import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * The text form of {@link MuonConfig} and {@link AdamWConfig}: {@code key=value} lines, doubles in Java's shortest
 * round-trip form, so that a config comes back bit for bit. Checkpoints store configs in it, and distributed ranks
 * compare it in their agreement fingerprints.
 *
 * <p>Each config has one key table: a key, how to write its value and how to set it on the config's draft. Adding
 * a field to a config means adding one row here.
 */
final class ConfigText {
    /** A key (or, for the coefficient schedule, a family of keys) of a config's text form. */
    private interface Field<C, D> {
        void write(C config, StringBuilder out);

        /** @throws IllegalArgumentException if a required key is missing or a value does not parse */
        void read(Map<String, String> text, D draft);
    }

    private static final List<Field<MuonConfig, MuonConfig.Draft>> MUON = List.of(
            scalar("lr", MuonConfig::lr, (d, v) -> d.lr = Double.parseDouble(v)),
            scalar("weightDecay", MuonConfig::weightDecay, (d, v) -> d.weightDecay = Double.parseDouble(v)),
            scalar("momentum", MuonConfig::momentum, (d, v) -> d.momentum = Double.parseDouble(v)),
            scalar("nesterov", MuonConfig::nesterov, (d, v) -> d.nesterov = Boolean.parseBoolean(v)),
            new CoefficientsField(),
            scalar("eps", MuonConfig::eps, (d, v) -> d.eps = Double.parseDouble(v)),
            scalar("nsSteps", MuonConfig::nsSteps, (d, v) -> d.nsSteps = Integer.parseInt(v)),
            scalar("adjustLr", MuonConfig::adjustLr, (d, v) -> d.adjustLr = AdjustLr.valueOf(v)),
            scalar("extraScale", MuonConfig::extraScale, (d, v) -> d.extraScale = Double.parseDouble(v)),
            scalar("nsPrecision", MuonConfig::nsPrecision, (d, v) -> d.nsPrecision = NsPrecision.valueOf(v)),
            scalar("convWeights", MuonConfig::convWeights, (d, v) -> d.convWeights = ConvWeights.valueOf(v)),
            scalar("stackedWeights", MuonConfig::stackedWeights,
                    (d, v) -> d.stackedWeights = StackedWeights.valueOf(v)),
            scalar("orthogonalization", MuonConfig::orthogonalization,
                    (d, v) -> d.orthogonalization = Orthogonalization.valueOf(v)),
            scalar("nsAlgorithm", MuonConfig::nsAlgorithm, (d, v) -> d.nsAlgorithm = NsAlgorithm.valueOf(v)),
            // Stored because a load restores the whole saved config: without the key a load would turn batching
            // back on in a run that had turned it off. Checkpoints from before the switch lack it and get the
            // default, which changes their continuation only by the rounding of batched products.
            optional("batchSameShape", MuonConfig::batchSameShape,
                    (d, v) -> d.batchSameShape = Boolean.parseBoolean(v), "true"),
            new NorMuonField());

    private static final List<Field<AdamWConfig, AdamWConfig.Draft>> ADAMW = List.of(
            scalar("lr", AdamWConfig::lr, (d, v) -> d.lr = Double.parseDouble(v)),
            scalar("beta1", AdamWConfig::beta1, (d, v) -> d.beta1 = Double.parseDouble(v)),
            scalar("beta2", AdamWConfig::beta2, (d, v) -> d.beta2 = Double.parseDouble(v)),
            scalar("eps", AdamWConfig::eps, (d, v) -> d.eps = Double.parseDouble(v)),
            scalar("weightDecay", AdamWConfig::weightDecay, (d, v) -> d.weightDecay = Double.parseDouble(v)));

    private ConfigText() {
    }

    static String of(MuonConfig c) {
        return write(c, MUON);
    }

    static String of(AdamWConfig c) {
        return write(c, ADAMW);
    }

    /**
     * The config a text holds: every key of the table is read (a key with a default may be absent), then the
     * config's own rules validate it.
     *
     * @throws IllegalArgumentException if a key is missing or a value does not parse or validate
     */
    static MuonConfig muonConfig(String text) {
        MuonConfig.Draft draft = new MuonConfig.Draft(MuonConfig.defaults());
        read(text, MUON, draft);
        return draft.build();
    }

    /** @throws IllegalArgumentException if a key is missing or a value does not parse or validate */
    static AdamWConfig adamWConfig(String text) {
        AdamWConfig.Draft draft = new AdamWConfig.Draft(AdamWConfig.defaults());
        read(text, ADAMW, draft);
        return draft.build();
    }

    private static <C, D> String write(C config, List<Field<C, D>> fields) {
        StringBuilder out = new StringBuilder();
        for (Field<C, D> field : fields) {
            field.write(config, out);
        }
        return out.toString();
    }

    private static <C, D> void read(String text, List<Field<C, D>> fields, D draft) {
        Map<String, String> map = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                map.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        for (Field<C, D> field : fields) {
            field.read(map, draft);
        }
    }

    private static <C, D> Field<C, D> scalar(String key, Function<C, Object> value, BiConsumer<D, String> set) {
        return optional(key, value, set, null);
    }

    /** A one-key field; {@code absent} is the value read when the key is missing, null if it is required. */
    private static <C, D> Field<C, D> optional(String key, Function<C, Object> value, BiConsumer<D, String> set,
                                               String absent) {
        return new Field<>() {
            @Override
            public void write(C config, StringBuilder out) {
                out.append(key).append('=').append(value.apply(config)).append('\n');
            }

            @Override
            public void read(Map<String, String> text, D draft) {
                String v = text.get(key);
                if (v == null && absent == null) {
                    throw new IllegalArgumentException("config key '" + key + "' is missing");
                }
                set.accept(draft, v == null ? absent : v);
            }
        };
    }

    private static String get(Map<String, String> text, String key) {
        String value = text.get(key);
        if (value == null) {
            throw new IllegalArgumentException("config key '" + key + "' is missing");
        }
        return value;
    }

    /**
     * NorMuon's settings, as two keys written only when it is on: the text of a plain Muon config, and so its
     * checkpoints and agreement fingerprints, stay what they were, and a text without them reads as NorMuon off.
     */
    private static final class NorMuonField implements Field<MuonConfig, MuonConfig.Draft> {
        private static final String BETA2 = "norMuon.beta2";
        private static final String EPS = "norMuon.eps";

        @Override
        public void write(MuonConfig config, StringBuilder out) {
            if (config.norMuon() != null) {
                out.append(BETA2).append('=').append(config.norMuon().beta2()).append('\n')
                        .append(EPS).append('=').append(config.norMuon().eps()).append('\n');
            }
        }

        @Override
        public void read(Map<String, String> text, MuonConfig.Draft draft) {
            String beta2 = text.get(BETA2);
            String eps = text.get(EPS);
            if ((beta2 == null) != (eps == null)) {
                throw new IllegalArgumentException("config keys '" + BETA2 + "' and '" + EPS + "' come together, "
                        + "got only '" + (beta2 == null ? EPS : BETA2) + "'");
            }
            draft.norMuon = beta2 == null ? null
                    : new NorMuonConfig(Double.parseDouble(beta2), Double.parseDouble(eps));
        }
    }

    /** The coefficient schedule, as four keys: its name, its triples, whether it repeats, its safety factor. */
    private static final class CoefficientsField implements Field<MuonConfig, MuonConfig.Draft> {
        @Override
        public void write(MuonConfig config, StringBuilder out) {
            CoefficientSchedule ns = config.nsCoefficients();
            StringBuilder triples = new StringBuilder();
            for (Coefficients t : ns.coefficients()) {
                if (triples.length() > 0) {
                    triples.append(';');
                }
                triples.append(t.a()).append(',').append(t.b()).append(',').append(t.c());
            }
            out.append("nsCoefficients.name=").append(ns.name())
                    .append("\nnsCoefficients.triples=").append(triples)
                    .append("\nnsCoefficients.repeating=").append(ns.repeating())
                    .append("\nnsCoefficients.normalizationSafety=").append(ns.normalizationSafety()).append('\n');
        }

        @Override
        public void read(Map<String, String> text, MuonConfig.Draft draft) {
            List<Coefficients> triples = new ArrayList<>();
            for (String t : get(text, "nsCoefficients.triples").split(";")) {
                String[] abc = t.split(",");
                if (abc.length != 3) {
                    throw new IllegalArgumentException("nsCoefficients.triples must hold a,b,c triples, got " + t);
                }
                triples.add(new Coefficients(Double.parseDouble(abc[0]), Double.parseDouble(abc[1]),
                        Double.parseDouble(abc[2])));
            }
            draft.nsCoefficients = new CoefficientSchedule(get(text, "nsCoefficients.name"), triples,
                    Boolean.parseBoolean(get(text, "nsCoefficients.repeating")),
                    Double.parseDouble(get(text, "nsCoefficients.normalizationSafety")));
        }
    }
}
