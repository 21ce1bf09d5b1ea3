package dev.muon.state;

import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;

import java.util.List;
import java.util.Objects;

/**
 * A well-formed state that does not fit the optimizer it is restored into: other parameters, shapes or dtypes,
 * other build settings, or values the math forbids. It lists every difference; the optimizer is unchanged.
 */
public final class StateMismatchException extends IllegalStateException {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final long serialVersionUID = 1L;

    /** The most differences spelled out in the message; {@link #differences()} holds all of them. */
    static final int SHOWN = 12;

    /**
     * What a {@link Difference} is about. The display text is what the message shows; {@link #SETTING} and
     * {@link #BUFFER} show the difference's {@linkplain Difference#subject() subject} instead (the setting's name,
     * the buffer's key).
     */
    public enum Field {
        /** How many parameters. */
        COUNT("count", true),
        /** The step count, against a framework's own counter of updates. */
        STEP_COUNT("count", false),
        /** Whether a named parameter is there. */
        PRESENCE("presence", true),
        /** The parameter's name at its place. */
        NAME("name", true),
        /** Which optimizer updates the parameter. */
        OPTIMIZER("optimizer", true),
        /** Which group of its optimizer the parameter is in. */
        GROUP("group", true),
        /** The parameter whose storage it shares. */
        TIED_TO("tied to", true),
        /** The row split of the parameter (a setting of the run, not a move). */
        ROW_SPLIT("row split", false),
        /** A tensor's shape. */
        SHAPE("shape", false),
        /** A tensor's dtype. */
        DTYPE("dtype", false),
        /** A tensor's values against what the math allows. */
        VALUES("values", false),
        /** How many Muon groups. */
        GROUPS("groups", false),
        /** Whether an AdamW part is there. */
        PART("part", false),
        /** How many parameters a group holds. */
        PARAMETERS("parameters", false),
        /** The schedule's base lrs. */
        BASE_LRS("base lrs", false),
        /** Which of its update's buffers a parameter's state holds. */
        MUON_STATE("Muon state", false),
        /** A parameter's AdamW step against the state's step. */
        ADAMW_STEP("AdamW step", false),
        /** A buffer the parameter's update does not keep; the subject is its key. */
        BUFFER("buffer", false),
        /** A build setting of a group; the subject is its name, e.g. {@code nsSteps}. */
        SETTING("setting", false);

        static {
            TorchNatives.extract();
        }

        private final String text;
        private final boolean assignment;

        Field(String text, boolean assignment) {
            this.text = text;
            this.assignment = assignment;
        }

        /**
         * The field as a message shows it.
         *
         * @return e.g. {@code tied to}
         */
        public String text() {
            return text;
        }

        /**
         * Whether a difference in this field is explained by a parameter that moved between optimizers or groups,
         * appeared, or was untied: what {@link AssignmentChanges#START_FRESH} resolves.
         *
         * @return true for the assignment's fields
         */
        public boolean assignment() {
            return assignment;
        }
    }

    /**
     * One difference.
     *
     * @param parameter the name of the parameter it concerns, or null for a group's, the schedule's or the step's
     * @param entry     where, as the message shows it: a parameter's quoted name (and which of its tensors),
     *                  {@code "muon group 0"}, {@code "adamw"}, {@code "step"}
     * @param field     what differs
     * @param subject   the setting's name ({@link Field#SETTING}) or the buffer's key ({@link Field#BUFFER}); null
     *                  for every other field
     * @param optimizer the optimizer's value, or the rule the state's value breaks
     * @param state     the state's value
     * @param hint      how to build an optimizer the state fits, or null
     */
    public record Difference(String parameter, String entry, Field field, String subject, String optimizer,
                             String state, String hint) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Validates.
         *
         * @throws IllegalArgumentException if a subject is missing for a setting or buffer, or given for another
         *                                  field
         */
        public Difference {
            Objects.requireNonNull(entry, "entry must not be null");
            Objects.requireNonNull(field, "field must not be null");
            boolean named = field == Field.SETTING || field == Field.BUFFER;
            if (named != (subject != null)) {
                throw new IllegalArgumentException("subject must be " + (named ? "given" : "null") + " for field "
                        + field + ", got " + subject);
            }
        }

        /**
         * A difference of no parameter (a group's, the schedule's, the step's) in a field without a subject.
         *
         * @param entry     where
         * @param field     what differs
         * @param optimizer the optimizer's value, or the rule
         * @param state     the state's value
         * @param hint      how to build an optimizer the state fits, or null
         */
        public Difference(String entry, Field field, String optimizer, String state, String hint) {
            this(null, entry, field, null, optimizer, state, hint);
        }

        /**
         * A group's build setting that differs.
         *
         * @param entry     the group, e.g. {@code muon group 0}
         * @param setting   the setting's name, e.g. {@code nsSteps}
         * @param optimizer the optimizer's value
         * @param state     the state's value
         * @param hint      how to build an optimizer the state fits, or null
         * @return the difference
         */
        public static Difference setting(String entry, String setting, String optimizer, String state,
                                         String hint) {
            return new Difference(null, entry, Field.SETTING, setting, optimizer, state, hint);
        }

        /**
         * A difference of a parameter or one of its tensors: the entry is its quoted name, then what.
         *
         * @param parameter the parameter's name
         * @param what      which of its tensors ({@code "momentum buffer"}), or null for the parameter itself
         * @param field     what differs (a field without a subject)
         * @param optimizer the optimizer's value, or the rule
         * @param state     the state's value
         * @param hint      how to build an optimizer the state fits, or null
         * @return the difference
         */
        public static Difference of(String parameter, String what, Field field, String optimizer, String state,
                                    String hint) {
            return of(parameter, what, field, null, optimizer, state, hint);
        }

        /**
         * A buffer a parameter's state holds that its update does not keep.
         *
         * @param parameter the parameter's name
         * @param key       the buffer's key
         * @param optimizer what the update keeps
         * @return the difference
         */
        public static Difference unknownBuffer(String parameter, String key, String optimizer) {
            return of(parameter, null, Field.BUFFER, key, optimizer, "present", null);
        }

        private static Difference of(String parameter, String what, Field field, String subject, String optimizer,
                                     String state, String hint) {
            return new Difference(parameter, "'" + Messages.shortened(parameter) + "'" + (what == null ? ""
                    : " " + what), field, subject, optimizer, state, hint);
        }

        /**
         * This difference with a hint.
         *
         * @param value how to build an optimizer the state fits
         * @return a copy
         */
        public Difference withHint(String value) {
            return new Difference(parameter, entry, field, subject, optimizer, state, value);
        }

        /**
         * What differs as the message shows it: the field's text, the setting's name, or the buffer and its key.
         *
         * @return e.g. {@code shape}, {@code nsSteps}, {@code buffer 'exp_avg'}
         */
        public String fieldText() {
            return switch (field) {
                case SETTING -> subject;
                case BUFFER -> "buffer '" + Messages.shortened(subject) + "'";
                default -> field.text();
            };
        }

        /**
         * The difference as a sentence fragment.
         *
         * @return e.g. {@code 'fc.weight' shape: this optimizer [4, 8], the state [8, 4]}
         */
        @Override
        public String toString() {
            return entry + " " + fieldText() + ": this optimizer " + optimizer + ", the state " + state
                    + (hint == null ? "" : " (" + hint + ")");
        }
    }

    private final transient List<Difference> differences;

    /**
     * The differences of one state against one optimizer.
     *
     * @param source      what the state came from (a file, or "the state")
     * @param differences every difference, at least one
     */
    public StateMismatchException(String source, List<Difference> differences) {
        this(source, differences, null);
    }

    /**
     * The differences of one state against one optimizer, and how to go on despite them.
     *
     * @param source      what the state came from (a file, or "the state")
     * @param differences every difference, at least one
     * @param advice      a sentence that says how to continue, appended to the message; or null
     */
    public StateMismatchException(String source, List<Difference> differences, String advice) {
        super(message(source, differences) + (advice == null ? "" : ". " + advice));
        this.differences = List.copyOf(differences);
    }

    private static String message(String source, List<Difference> differences) {
        StringBuilder text = new StringBuilder(source).append(" does not fit this optimizer (")
                .append(differences.size()).append(differences.size() == 1 ? " difference" : " differences")
                .append("): ");
        for (int i = 0; i < Math.min(SHOWN, differences.size()); i++) {
            text.append(i == 0 ? "" : "; ").append(differences.get(i));
        }
        if (differences.size() > SHOWN) {
            text.append("; and ").append(differences.size() - SHOWN).append(" more");
        }
        return text.append("; nothing was changed").toString();
    }

    /**
     * Every difference.
     *
     * @return the differences, in entry order
     */
    public List<Difference> differences() {
        return differences;
    }
}
