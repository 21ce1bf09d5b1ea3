package dev.muon.state;

import dev.muon.internal.Messages;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.ScheduleRecord;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@link ScheduleRecord}'s schedule as a checkpoint's document holds it: an object of its kind and its fields,
 * each under a key written here, so that renaming a field of a schedule in the code changes no file:
 * <pre>
 *   {"kind": "constant"}
 *   {"kind": "warmupCosine", "warmupSteps": 100, "totalSteps": 5000, "minFactor": 0.1}
 *   {"kind": "warmupStableDecay", "warmupSteps": 200, "stableSteps": 8000, "decaySteps": 1800, "minFactor": 0.0}
 *   {"kind": "custom"}       {"kind": "unknown"}
 * </pre>
 * Files written before held the schedule as one line of text ({@code WarmupCosine[warmupSteps=100,
 * totalSteps=5000, minFactor=0.1]}, {@code custom}, or the unknown record's sentence); that text is read as it was
 * written then, by its own fixed spelling.
 */
final class ScheduleEntries {
    private static final String UNKNOWN_TEXT = "unknown (restored from a state without a schedule record)";
    /** The one-line form files of the first version held: a record's name, then its fields in brackets. */
    private static final Pattern LEGACY = Pattern.compile("(Constant|WarmupCosine|WarmupStableDecay)\\[(.*)]");

    private ScheduleEntries() {
    }

    /**
     * The object of a record's schedule.
     *
     * @throws IllegalStateException if the record's schedule is of a built-in kind this codec does not write
     */
    static Map<String, Object> toJson(ScheduleRecord record) {
        return switch (record.source()) {
            case CUSTOM -> kind("custom");
            case UNKNOWN -> kind("unknown");
            case BUILT_IN -> builtIn(record.schedule());
        };
    }

    /**
     * The object of a built-in schedule: its kind and its fields. A kind {@link LrSchedule#isBuiltIn} accepts and
     * this does not spell is refused, never written as another kind.
     *
     * @throws IllegalStateException naming the schedule's class, if it is of no kind written here
     */
    static Map<String, Object> builtIn(LrSchedule s) {
        Map<String, Object> out;
        if (s instanceof LrSchedule.Constant) {
            out = kind("constant");
        } else if (s instanceof LrSchedule.WarmupCosine w) {
            out = kind("warmupCosine");
            out.put("warmupSteps", w.warmupSteps());
            out.put("totalSteps", w.totalSteps());
            out.put("minFactor", w.minFactor());
        } else if (s instanceof LrSchedule.WarmupStableDecay w) {
            out = kind("warmupStableDecay");
            out.put("warmupSteps", w.warmupSteps());
            out.put("stableSteps", w.stableSteps());
            out.put("decaySteps", w.decaySteps());
            out.put("minFactor", w.minFactor());
        } else {
            throw new IllegalStateException("cannot save a schedule of kind " + s.getClass().getName()
                    + ": a checkpoint holds constant, warmupCosine, warmupStableDecay, custom or unknown");
        }
        return out;
    }

    private static Map<String, Object> kind(String kind) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("kind", kind);
        return out;
    }

    /**
     * The record of these base lrs and a document's schedule: an object of {@link #toJson}'s form, or the text of
     * a file written before.
     *
     * @throws FormatException naming {@code where}, if the value is neither or a field breaks its rule
     */
    static ScheduleRecord fromJson(double[] initialLrs, Object json, String where) {
        try {
            if (json instanceof String text) {
                return legacy(initialLrs, text, where);
            }
            if (!(json instanceof Map<?, ?> m) || !(m.get("kind") instanceof String kind)) {
                throw new FormatException(where, "must be an object with a 'kind', or a schedule's text");
            }
            return switch (kind) {
                case "custom" -> only(m, Set.of("kind"), where, new ScheduleRecord(initialLrs,
                        ScheduleRecord.Source.CUSTOM, null));
                case "unknown" -> only(m, Set.of("kind"), where, ScheduleRecord.unknown(initialLrs));
                case "constant" -> only(m, Set.of("kind"), where, ScheduleRecord.of(initialLrs,
                        LrSchedule.constant()));
                case "warmupCosine" -> only(m, Set.of("kind", "warmupSteps", "totalSteps", "minFactor"), where,
                        ScheduleRecord.of(initialLrs, LrSchedule.warmupCosine(integer(m.get("warmupSteps"),
                                where + ".warmupSteps"), integer(m.get("totalSteps"), where + ".totalSteps"),
                                number(m.get("minFactor"), where + ".minFactor"))));
                case "warmupStableDecay" -> only(m, Set.of("kind", "warmupSteps", "stableSteps", "decaySteps",
                        "minFactor"), where, ScheduleRecord.of(initialLrs, LrSchedule.warmupStableDecay(
                        integer(m.get("warmupSteps"), where + ".warmupSteps"), integer(m.get("stableSteps"),
                                where + ".stableSteps"), integer(m.get("decaySteps"), where + ".decaySteps"),
                        number(m.get("minFactor"), where + ".minFactor"))));
                default -> throw new FormatException(where + ".kind", "must be constant, warmupCosine, "
                        + "warmupStableDecay, custom or unknown, got '" + Messages.shortened(kind) + "'");
            };
        } catch (IllegalArgumentException e) {
            throw new FormatException(where, e.getMessage());
        }
    }

    private static ScheduleRecord only(Map<?, ?> m, Set<String> keys, String where, ScheduleRecord record) {
        if (!m.keySet().equals(keys)) {
            throw new FormatException(where, "must have exactly the keys " + new java.util.TreeSet<>(keys)
                    + " for its kind, got " + Messages.shortened(new java.util.TreeSet<>(
                    m.keySet().stream().map(String::valueOf).toList())));
        }
        return record;
    }

    /** The schedule text of the first version's files, by the spelling they were written with. */
    private static ScheduleRecord legacy(double[] initialLrs, String text, String where) {
        if (text.equals("custom")) {
            return new ScheduleRecord(initialLrs, ScheduleRecord.Source.CUSTOM, null);
        }
        if (text.equals(UNKNOWN_TEXT)) {
            return ScheduleRecord.unknown(initialLrs);
        }
        Matcher m = LEGACY.matcher(text);
        if (!m.matches()) {
            throw new FormatException(where, "is not a schedule's text, got '" + Messages.shortened(text) + "'");
        }
        Map<String, String> fields = new LinkedHashMap<>();
        for (String pair : m.group(2).split(",")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                fields.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
            }
        }
        try {
            return ScheduleRecord.of(initialLrs, switch (m.group(1)) {
                case "WarmupCosine" -> LrSchedule.warmupCosine(Long.parseLong(fields.get("warmupSteps")),
                        Long.parseLong(fields.get("totalSteps")), Double.parseDouble(fields.get("minFactor")));
                case "WarmupStableDecay" -> LrSchedule.warmupStableDecay(Long.parseLong(fields.get("warmupSteps")),
                        Long.parseLong(fields.get("stableSteps")), Long.parseLong(fields.get("decaySteps")),
                        Double.parseDouble(fields.get("minFactor")));
                default -> LrSchedule.constant();
            });
        } catch (NullPointerException | NumberFormatException e) {
            throw new FormatException(where, "'" + Messages.shortened(text) + "' does not parse: "
                    + e.getMessage());
        }
    }

    private static long integer(Object v, String where) {
        return Json.integer(v, where, Messages::shortened);
    }

    private static double number(Object v, String where) {
        return Json.number(v, where, Messages::shortened);
    }
}
