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
     * One difference.
     *
     * @param parameter the name of the parameter it concerns, or null for a group's, the schedule's or the step's
     * @param entry     where, as the message shows it: a parameter's quoted name (and which of its tensors),
     *                  {@code "muon group 0"}, {@code "adamw"}, {@code "step"}
     * @param field     what differs: {@code "shape"}, {@code "nsSteps"}, ...
     * @param optimizer the optimizer's value, or the rule the state's value breaks
     * @param state     the state's value
     * @param hint      how to build an optimizer the state fits, or null
     */
    public record Difference(String parameter, String entry, String field, String optimizer, String state,
                             String hint) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /** Validates. */
        public Difference {
            Objects.requireNonNull(entry, "entry");
            Objects.requireNonNull(field, "field");
        }

        /**
         * A difference of no parameter (a group's, the schedule's, the step's).
         *
         * @param entry     where
         * @param field     what differs
         * @param optimizer the optimizer's value, or the rule
         * @param state     the state's value
         * @param hint      how to build an optimizer the state fits, or null
         */
        public Difference(String entry, String field, String optimizer, String state, String hint) {
            this(null, entry, field, optimizer, state, hint);
        }

        /**
         * A difference of a parameter or one of its tensors: the entry is its quoted name, then what.
         *
         * @param parameter the parameter's name
         * @param what      which of its tensors ({@code "momentum buffer"}), or null for the parameter itself
         * @param field     what differs
         * @param optimizer the optimizer's value, or the rule
         * @param state     the state's value
         * @param hint      how to build an optimizer the state fits, or null
         * @return the difference
         */
        public static Difference of(String parameter, String what, String field, String optimizer, String state,
                                    String hint) {
            return new Difference(parameter, "'" + Messages.shortened(parameter) + "'" + (what == null ? ""
                    : " " + what), field, optimizer, state, hint);
        }

        /**
         * This difference with a hint.
         *
         * @param value how to build an optimizer the state fits
         * @return a copy
         */
        public Difference withHint(String value) {
            return new Difference(parameter, entry, field, optimizer, state, value);
        }

        /**
         * The difference as a sentence fragment.
         *
         * @return e.g. {@code 'fc.weight' shape: this optimizer [4, 8], the state [8, 4]}
         */
        @Override
        public String toString() {
            return entry + " " + field + ": this optimizer " + optimizer + ", the state " + state
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
