package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.ConvWeights;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.MuonHyperparameters;
import dev.muon.NorMuonConfig;
import dev.muon.Orthogonalization;
import dev.muon.StackedWeights;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The fields of {@link MuonConfig} and {@link AdamWConfig}, one row each: its key in files, its value as a JSON
 * value (doubles as Java's shortest round-trip form, so a config comes back bit for bit), and how to set it from
 * one. A restore takes the state's hyperparameters (Muon's {@link MuonHyperparameters}; every AdamW field); every
 * other Muon field decided how the optimizer was built and must be equal ({@link StateFit}).
 *
 * <p>Adding a field to a config means adding one row here.
 */
final class ConfigFields {
    /**
     * One field.
     *
     * @param key its key: the config's accessor of the field
     * @param get its JSON value
     * @param set the config with the field set from a JSON value
     * @param <C> the config type
     */
    record Field<C>(String key, Function<C, Object> get, BiFunction<C, Object, C> set) {
    }

    /**
     * What a restore may change: the hyperparameters, named by their type ({@link MuonHyperparameters}, whose
     * fields a Muon group replaces on a restore) and every AdamW field; the rest of a Muon config chose how the
     * optimizer was built.
     */
    private static final Set<String> RESTORABLE_MUON_KEYS = Arrays.stream(
            MuonHyperparameters.class.getRecordComponents()).map(RecordComponent::getName).collect(Collectors.toSet());

    static final List<Field<MuonConfig>> MUON = List.of(
            new Field<>("lr", MuonConfig::lr, (c, v) -> c.withLr(number(v, "lr"))),
            new Field<>("weightDecay", MuonConfig::weightDecay,
                    (c, v) -> c.withWeightDecay(number(v, "weightDecay"))),
            new Field<>("momentum", MuonConfig::momentum, (c, v) -> c.withMomentum(number(v, "momentum"))),
            new Field<>("nesterov", MuonConfig::nesterov, (c, v) -> c.withNesterov(bool(v, "nesterov"))),
            new Field<>("adjustLr", c -> c.adjustLr().name(),
                    (c, v) -> c.withAdjustLr(AdjustLr.valueOf(name(v, "adjustLr")))),
            new Field<>("extraScale", MuonConfig::extraScale,
                    (c, v) -> c.withExtraScale(number(v, "extraScale"))),
            new Field<>("nsCoefficients", c -> schedule(c.nsCoefficients()),
                    (c, v) -> c.withNsCoefficients(schedule(v))),
            new Field<>("eps", MuonConfig::eps, (c, v) -> c.withEps(number(v, "eps"))),
            new Field<>("nsSteps", c -> (long) c.nsSteps(), (c, v) -> c.withNsSteps(integer(v, "nsSteps"))),
            new Field<>("nsPrecision", c -> c.nsPrecision().name(),
                    (c, v) -> c.withNsPrecision(NsPrecision.valueOf(name(v, "nsPrecision")))),
            new Field<>("nsAlgorithm", c -> c.nsAlgorithm().name(),
                    (c, v) -> c.withNsAlgorithm(NsAlgorithm.valueOf(name(v, "nsAlgorithm")))),
            new Field<>("orthogonalization", c -> c.orthogonalization().name(),
                    (c, v) -> c.withOrthogonalization(Orthogonalization.valueOf(name(v, "orthogonalization")))),
            new Field<>("convWeights", c -> c.convWeights().name(),
                    (c, v) -> c.withConvWeights(ConvWeights.valueOf(name(v, "convWeights")))),
            new Field<>("stackedWeights", c -> c.stackedWeights().name(),
                    (c, v) -> c.withStackedWeights(StackedWeights.valueOf(name(v, "stackedWeights")))),
            new Field<>("batchSameShape", MuonConfig::batchSameShape,
                    (c, v) -> c.withBatchSameShape(bool(v, "batchSameShape"))),
            new Field<>("norMuon", c -> norMuon(c.norMuon()), (c, v) -> c.withNorMuon(norMuon(v))),
            new Field<>("cautiousWeightDecay", MuonConfig::cautiousWeightDecay,
                    (c, v) -> c.withCautiousWeightDecay(bool(v, "cautiousWeightDecay"))),
            new Field<>("momentumPrecision", c -> c.momentumPrecision().name(),
                    (c, v) -> c.withMomentumPrecision(MomentumPrecision.valueOf(name(v, "momentumPrecision")))));

    static final List<Field<AdamWConfig>> ADAMW = List.of(
            new Field<>("lr", AdamWConfig::lr, (c, v) -> c.withLr(number(v, "lr"))),
            new Field<>("beta1", AdamWConfig::beta1, (c, v) -> c.withBetas(number(v, "beta1"), c.beta2())),
            new Field<>("beta2", AdamWConfig::beta2, (c, v) -> c.withBetas(c.beta1(), number(v, "beta2"))),
            new Field<>("eps", AdamWConfig::eps, (c, v) -> c.withEps(number(v, "eps"))),
            new Field<>("weightDecay", AdamWConfig::weightDecay,
                    (c, v) -> c.withWeightDecay(number(v, "weightDecay"))));

    private ConfigFields() {
    }

    /** A config as a JSON object, key by key in table order. */
    static <C> Map<String, Object> toJson(C config, List<Field<C>> fields) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Field<C> f : fields) {
            out.put(f.key(), f.get().apply(config));
        }
        return out;
    }

    /**
     * The config a JSON object holds, set field by field on {@code base}; every key of the table must be there and
     * no other.
     *
     * @throws IllegalArgumentException naming the key, if one is missing, unknown, or its value is invalid
     */
    static <C> C fromJson(Object json, List<Field<C>> fields, C base) {
        if (!(json instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("a config must be a JSON object");
        }
        for (Object key : map.keySet()) {
            if (fields.stream().noneMatch(f -> f.key().equals(key))) {
                throw new IllegalArgumentException("config key '" + key + "' is unknown");
            }
        }
        C config = base;
        for (Field<C> f : fields) {
            if (!map.containsKey(f.key())) {
                throw new IllegalArgumentException("config key '" + f.key() + "' is missing");
            }
            try {
                config = f.set().apply(config, map.get(f.key()));
            } catch (IllegalArgumentException | ClassCastException e) {
                throw new IllegalArgumentException("config key '" + f.key() + "': " + e.getMessage(), e);
            }
        }
        return config;
    }

    /** The fields whose values differ between two configs, as (key, first, second) in their readable form. */
    static <C> List<String[]> differing(C a, C b, List<Field<C>> fields, boolean restorableToo) {
        List<String[]> out = new ArrayList<>();
        for (Field<C> f : fields) {
            Object va = f.get().apply(a);
            Object vb = f.get().apply(b);
            boolean restorable = !(a instanceof MuonConfig) || RESTORABLE_MUON_KEYS.contains(f.key());
            if ((restorableToo || !restorable) && !Objects.equals(va, vb)) {
                out.add(new String[]{f.key(), readable(f.key(), va), readable(f.key(), vb)});
            }
        }
        return out;
    }

    /** A field's JSON value as a message shows it: NorMuon as its builder call, a schedule by name and triples. */
    private static String readable(String key, Object json) {
        if (key.equals("norMuon")) {
            return json == null ? "off" : "withNorMuon(" + ((Map<?, ?>) json).get("beta2") + ", "
                    + ((Map<?, ?>) json).get("eps") + ")";
        }
        if (json instanceof Map<?, ?> schedule) {
            return schedule.get("name") + " " + schedule.get("triples") + (Boolean.TRUE.equals(
                    schedule.get("repeating")) ? "" : " (not repeating)") + ", normalizationSafety "
                    + schedule.get("normalizationSafety");
        }
        return String.valueOf(json);
    }

    private static Map<String, Object> schedule(CoefficientSchedule s) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", s.name());
        List<Object> triples = new ArrayList<>();
        for (Coefficients t : s.coefficients()) {
            triples.add(List.of(t.a(), t.b(), t.c()));
        }
        out.put("triples", triples);
        out.put("repeating", s.repeating());
        out.put("normalizationSafety", s.normalizationSafety());
        return out;
    }

    private static CoefficientSchedule schedule(Object v) {
        if (!(v instanceof Map<?, ?> m) || m.size() != 4) {
            throw new IllegalArgumentException("must be an object of name, triples, repeating and "
                    + "normalizationSafety");
        }
        if (!(m.get("triples") instanceof List<?> list)) {
            throw new IllegalArgumentException("triples must be an array of [a, b, c]");
        }
        List<Coefficients> triples = new ArrayList<>();
        for (Object t : list) {
            if (!(t instanceof List<?> abc) || abc.size() != 3) {
                throw new IllegalArgumentException("triples must be an array of [a, b, c]");
            }
            triples.add(new Coefficients(number(abc.get(0), "a"), number(abc.get(1), "b"), number(abc.get(2), "c")));
        }
        return new CoefficientSchedule(name(m.get("name"), "name"), triples, bool(m.get("repeating"), "repeating"),
                number(m.get("normalizationSafety"), "normalizationSafety"));
    }

    private static Object norMuon(NorMuonConfig n) {
        if (n == null) {
            return null;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("beta2", n.beta2());
        out.put("eps", n.eps());
        return out;
    }

    private static NorMuonConfig norMuon(Object v) {
        if (v == null) {
            return null;
        }
        if (!(v instanceof Map<?, ?> m) || m.size() != 2) {
            throw new IllegalArgumentException("must be null or an object of beta2 and eps");
        }
        return new NorMuonConfig(number(m.get("beta2"), "beta2"), number(m.get("eps"), "eps"));
    }

    private static double number(Object v, String key) {
        if (v instanceof Double d) {
            return d;
        }
        if (v instanceof Long l) {
            return l;
        }
        throw new IllegalArgumentException(key + " must be a number, got " + describe(v));
    }

    private static int integer(Object v, String key) {
        if (!(v instanceof Long l) || l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(key + " must be a 32-bit integer, got " + describe(v));
        }
        return (int) (long) l;
    }

    private static boolean bool(Object v, String key) {
        if (!(v instanceof Boolean b)) {
            throw new IllegalArgumentException(key + " must be true or false, got " + describe(v));
        }
        return b;
    }

    private static String name(Object v, String key) {
        if (!(v instanceof String s)) {
            throw new IllegalArgumentException(key + " must be a string, got " + describe(v));
        }
        return s;
    }

    private static String describe(Object v) {
        return v instanceof String s ? "'" + dev.muon.internal.Messages.shortened(s) + "'"
                : v instanceof Map ? "an object" : v instanceof List ? "an array" : String.valueOf(v);
    }
}
