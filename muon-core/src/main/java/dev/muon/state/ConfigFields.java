package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.MuonConfig;
import dev.muon.MuonHyperparameters;
import dev.muon.internal.Messages;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NewtonSchulzConfig;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The fields of {@link MuonConfig} and {@link AdamWConfig} as files store them, read off the records themselves:
 * one key per record component, named as its accessor, with the Newton–Schulz settings
 * ({@link NewtonSchulzConfig}) one by one at the top level. A value is stored by its type: a number (doubles as
 * Java's shortest round-trip form, so a config comes back bit for bit), an integer, a boolean, an enum by name, a
 * coefficient schedule as its triples, and a nested settings record (NorMuon's, a variant's) as an object of its
 * fields, or null when it is off. A config is read whole and built once, so it is validated as the record
 * validates it, and an error names the key it concerns.
 *
 * <p>Adding a field to a config adds its key here with nothing to write, as long as its type is one of those. A
 * file written before a field existed lacks its key and reads as the field's default (a new variant is off by
 * default); the keys of the first format of this file ({@link #FIRST_MUON_KEYS}) must all be there.
 *
 * <p>A restore takes the state's hyperparameters (Muon's {@link MuonHyperparameters}; every AdamW field); every
 * other Muon field decided how the optimizer was built and must be equal ({@link StateFit}).
 */
final class ConfigFields {
    /**
     * One field.
     *
     * @param key       its key: the accessor of the field
     * @param type      the field's type
     * @param component the component it is read from
     * @param nested    the component of {@link MuonConfig} that holds it ({@code newtonSchulz}), or null
     * @param <C>       the config type
     */
    record Field<C>(String key, Class<?> type, RecordComponent component, RecordComponent nested) {
        /** The field's value in a config. */
        Object value(C config) {
            return read(component, nested == null ? config : read(nested, config));
        }
    }

    static final List<Field<MuonConfig>> MUON = fieldsOf(MuonConfig.class);
    static final List<Field<AdamWConfig>> ADAMW = fieldsOf(AdamWConfig.class);

    /**
     * The keys every Muon config in a file of format 3, the first, has; a key added since may be missing from a
     * file and reads as its default. A fixed list, not derived: it records what files of that format hold.
     */
    static final Set<String> FIRST_MUON_KEYS = Set.of("lr", "weightDecay", "momentum", "nesterov", "adjustLr",
            "extraScale", "nsCoefficients", "eps", "nsSteps", "nsPrecision", "nsAlgorithm", "orthogonalization",
            "convWeights", "stackedWeights", "batchSameShape", "norMuon", "cautiousWeightDecay", "momentumPrecision");

    /**
     * What a restore may change: the hyperparameters, named by their type ({@link MuonHyperparameters}, whose
     * fields a Muon group replaces on a restore) and every AdamW field; the rest of a Muon config chose how the
     * optimizer was built.
     */
    private static final Set<String> RESTORABLE_MUON_KEYS = Arrays.stream(
            MuonHyperparameters.class.getRecordComponents()).map(RecordComponent::getName).collect(Collectors.toSet());

    private ConfigFields() {
    }

    private static <C> List<Field<C>> fieldsOf(Class<C> type) {
        List<Field<C>> fields = new ArrayList<>();
        for (RecordComponent c : type.getRecordComponents()) {
            if (c.getType() == NewtonSchulzConfig.class) {
                for (RecordComponent inner : NewtonSchulzConfig.class.getRecordComponents()) {
                    fields.add(new Field<>(inner.getName(), inner.getType(), inner, c));
                }
            } else {
                fields.add(new Field<>(c.getName(), c.getType(), c, null));
            }
        }
        return List.copyOf(fields);
    }

    /** A config as a JSON object, key by key in the record's order. */
    static <C> Map<String, Object> toJson(C config, List<Field<C>> fields) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Field<C> f : fields) {
            out.put(f.key(), encode(f.value(config), f.type()));
        }
        return out;
    }

    /**
     * The config a JSON object holds: every key is one of the fields, and a field's key is there unless the field
     * was added after the first format (then {@code base}'s value); validated as the record validates it.
     *
     * @throws IllegalArgumentException naming the key, if one is missing, unknown, or its value is invalid
     */
    @SuppressWarnings("unchecked")
    static <C extends Record> C fromJson(Object json, List<Field<C>> fields, C base) {
        if (!(json instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("a config must be a JSON object");
        }
        for (Object key : map.keySet()) {
            if (fields.stream().noneMatch(f -> f.key().equals(key))) {
                throw new IllegalArgumentException("config key '" + Messages.shortened(String.valueOf(key))
                        + "' is unknown");
            }
        }
        boolean muon = base instanceof MuonConfig;
        Map<String, Object> values = new LinkedHashMap<>();
        for (Field<C> f : fields) {
            if (!map.containsKey(f.key())) {
                if (!muon || FIRST_MUON_KEYS.contains(f.key())) {
                    throw new IllegalArgumentException("config key '" + f.key() + "' is missing");
                }
                values.put(f.key(), f.value(base));
                continue;
            }
            try {
                values.put(f.key(), decode(map.get(f.key()), f.type(), f.key()));
            } catch (IllegalArgumentException | ClassCastException e) {
                throw new IllegalArgumentException("config key '" + f.key() + "': " + e.getMessage(), e);
            }
        }
        try {
            return (C) build(base.getClass(), fields, values);
        } catch (IllegalArgumentException e) {
            // Every field's rule names the field first ("lr must be >= 0", "norMuon beta2 must be ..."): the key.
            String first = e.getMessage() == null ? "" : e.getMessage().split(" ", 2)[0];
            boolean named = fields.stream().anyMatch(f -> f.key().equals(first));
            throw new IllegalArgumentException((named ? "config key '" + first + "': " : "config: ")
                    + e.getMessage(), e);
        }
    }

    /** The record of {@code type} from the fields' values, the Newton–Schulz ones gathered into theirs first. */
    private static <C> Object build(Class<?> type, List<Field<C>> fields, Map<String, Object> values) {
        RecordComponent[] components = type.getRecordComponents();
        Object[] args = new Object[components.length];
        for (int i = 0; i < components.length; i++) {
            RecordComponent c = components[i];
            if (c.getType() == NewtonSchulzConfig.class) {
                RecordComponent[] inner = NewtonSchulzConfig.class.getRecordComponents();
                Object[] innerArgs = new Object[inner.length];
                for (int j = 0; j < inner.length; j++) {
                    innerArgs[j] = values.get(inner[j].getName());
                }
                args[i] = construct(NewtonSchulzConfig.class, innerArgs);
            } else {
                args[i] = values.get(c.getName());
            }
        }
        return construct(type, args);
    }

    /** The fields whose values differ between two configs, as (key, first, second) in their readable form. */
    static <C> List<String[]> differing(C a, C b, List<Field<C>> fields, boolean restorableToo) {
        List<String[]> out = new ArrayList<>();
        for (Field<C> f : fields) {
            Object va = encode(f.value(a), f.type());
            Object vb = encode(f.value(b), f.type());
            boolean restorable = !(a instanceof MuonConfig) || RESTORABLE_MUON_KEYS.contains(f.key());
            if ((restorableToo || !restorable) && !Objects.equals(va, vb)) {
                out.add(new String[]{f.key(), readable(f.key(), va), readable(f.key(), vb)});
            }
        }
        return out;
    }

    /**
     * A field's JSON value as a message shows it: a settings record as its builder call
     * ({@code withNorMuon(0.95, 1.0E-10)}) or {@code off}, a schedule by name and triples.
     */
    private static String readable(String key, Object json) {
        if (json instanceof Map<?, ?> m && m.containsKey("triples")) {
            return m.get("name") + " " + m.get("triples") + (Boolean.TRUE.equals(m.get("repeating")) ? ""
                    : " (not repeating)") + ", normalizationSafety " + m.get("normalizationSafety");
        }
        if (json instanceof Map<?, ?> m) {
            return "with" + Character.toUpperCase(key.charAt(0)) + key.substring(1) + "("
                    + m.values().stream().map(String::valueOf).collect(Collectors.joining(", ")) + ")";
        }
        return json == null ? "off" : String.valueOf(json);
    }

    // ------------------------------------------------------------------ values by type

    /** A field's value as JSON: by its type. */
    private static Object encode(Object value, Class<?> type) {
        if (value == null) {
            return null;
        }
        if (type == int.class) {
            return (long) (int) value;
        }
        if (type == double.class || type == boolean.class) {
            return value;
        }
        if (type.isEnum()) {
            return ((Enum<?>) value).name();
        }
        if (type == CoefficientSchedule.class) {
            return schedule((CoefficientSchedule) value);
        }
        if (type.isRecord()) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (RecordComponent c : type.getRecordComponents()) {
                out.put(c.getName(), encode(read(c, value), c.getType()));
            }
            return out;
        }
        throw new IllegalStateException("a config field of type " + type.getName() + " has no JSON form; give "
                + "it one in ConfigFields");
    }

    /**
     * The constant of an enum by name, through the enum's own {@code values()}: {@code Enum.valueOf} reflects over
     * every public method of the type, which loads their signatures' classes, and one of {@code NsPrecision}'s names
     * libtorch's scalar type, absent where muon-djl reads a checkpoint.
     */
    private static Object enumConstant(Class<?> type, String name, String key) {
        Object[] constants;
        try {
            constants = (Object[]) java.lang.invoke.MethodHandles.publicLookup()
                    .findStatic(type, "values", java.lang.invoke.MethodType.methodType(type.arrayType())).invoke();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("cannot list the constants of " + type.getName(), e);
        }
        for (Object c : constants) {
            if (((Enum<?>) c).name().equals(name)) {
                return c;
            }
        }
        // The name comes from a file: quoted cut, as every value from a file is (a crafted one may be megabytes).
        throw new IllegalArgumentException(key + " must be one of " + Arrays.stream(constants)
                .map(c -> ((Enum<?>) c).name()).collect(Collectors.joining(", ")) + ", got " + describe(name));
    }

    /** A field's value from JSON: by its type; a settings record from an object of exactly its fields. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object decode(Object v, Class<?> type, String key) {
        if (type == double.class) {
            return number(v, key);
        }
        if (type == int.class) {
            return integer(v, key);
        }
        if (type == boolean.class) {
            return bool(v, key);
        }
        if (type.isEnum()) {
            return enumConstant(type, name(v, key), key);
        }
        if (type == CoefficientSchedule.class) {
            return schedule(v);
        }
        if (type.isRecord()) {
            RecordComponent[] components = type.getRecordComponents();
            if (v == null) {
                return null;
            }
            List<String> names = Arrays.stream(components).map(RecordComponent::getName).toList();
            if (!(v instanceof Map<?, ?> m) || !m.keySet().equals(Set.copyOf(names))) {
                throw new IllegalArgumentException("must be null or an object of " + (names.size() == 1
                        ? names.get(0) : String.join(", ", names.subList(0, names.size() - 1)) + " and "
                        + names.get(names.size() - 1)));
            }
            Object[] args = new Object[components.length];
            for (int i = 0; i < components.length; i++) {
                args[i] = decode(m.get(names.get(i)), components[i].getType(), names.get(i));
            }
            return construct(type, args);
        }
        throw new IllegalStateException("a config field of type " + type.getName() + " has no JSON form");
    }

    private static Object read(RecordComponent c, Object record) {
        try {
            return c.getAccessor().invoke(record);
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new IllegalStateException("cannot read " + c, e);
        }
    }

    /** A record through its canonical constructor; its validation's exception as it is. */
    private static Object construct(Class<?> type, Object[] args) {
        Class<?>[] types = Arrays.stream(type.getRecordComponents()).map(RecordComponent::getType)
                .toArray(Class<?>[]::new);
        try {
            Constructor<?> canonical = type.getDeclaredConstructor(types);
            return canonical.newInstance(args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException("cannot make " + type.getName(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot make " + type.getName(), e);
        }
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
        return v instanceof String s ? "'" + Messages.shortened(s) + "'"
                : v instanceof Map ? "an object" : v instanceof List ? "an array" : String.valueOf(v);
    }
}
