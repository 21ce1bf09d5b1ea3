package dev.muon;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Models and settings with the assignment or refusal both modules must give them: muon-core's
 * {@code ClassificationTableTest} runs every case through {@code MuonAdamW.builder(namedParameters)} on libtorch
 * tensors, muon-djl's through its {@code MuonAdamW} on a DJL block of the same tree, and both compare with the same
 * rows and messages. Plain Java, so that muon-djl reads it from muon-core's test jar without the bindings.
 *
 * <p>A case's parameters are dotted names in the order a module tree registers them (each module's parameters,
 * then its children's), so that a DJL block built from the names lists them in the same order. Expected texts name
 * parameters as {@code {fc1.bias}} and settings as {@code {forceMuon}}: each module substitutes its own names
 * ({@link #resolve}).
 */
public final class ClassificationCases {
    private ClassificationCases() {
    }

    /**
     * One parameter.
     *
     * @param name      the dotted name
     * @param shape     the shape
     * @param trainable whether it takes gradients
     * @param tiedTo    the dotted name of the first name of its tensor, or null
     */
    public record Param(String name, long[] shape, boolean trainable, String tiedTo) {
    }

    /**
     * One case.
     *
     * @param label          what it shows
     * @param params         its parameters, in registration order
     * @param forceMuon      dotted names (or names of nothing) given to forceMuon
     * @param forceAdamW     given to forceAdamW
     * @param muonWhen       a custom rule on (dotted name, shape), or null
     * @param outputLayer    whether the output-layer rule is on
     * @param allowEmptyMuon whether an empty Muon group is accepted
     * @param muonConfig     the Muon config given, or null for the module's default
     * @param rows           the expected rows, {@code "{name} KIND reason"}, or null for a refusal
     * @param frozen         the expected names left out, as {@code {name}}
     * @param refusal        the expected message (its first line), or null
     */
    public record Case(String label, List<Param> params, List<String> forceMuon, List<String> forceAdamW,
                       BiPredicate<String, long[]> muonWhen, boolean outputLayer, boolean allowEmptyMuon,
                       MuonConfig muonConfig, List<String> rows, List<String> frozen, String refusal) {
        @Override
        public String toString() {
            return label;
        }
    }

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{([^}]+)}");

    /**
     * An expected text in a module's words.
     *
     * @param template   the text with {@code {dotted.name}} and {@code {setting}} placeholders ({@code {source}}
     *                   for what holds the parameters)
     * @param nameOf     the module's name of a dotted name
     * @param binding    the module
     * @return the text
     */
    public static String resolve(String template, Function<String, String> nameOf, Binding binding) {
        Matcher m = PLACEHOLDER.matcher(template);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String key = m.group(1);
            String value = key.equals("source") ? binding.source()
                    : key.contains(".") ? nameOf.apply(key) : binding.setting(key);
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        return m.appendTail(out).toString();
    }

    private static Param p(String name, long... shape) {
        return new Param(name, shape, true, null);
    }

    private static Param frozen(String name, long... shape) {
        return new Param(name, shape, false, null);
    }

    private static Param tied(String name, String to, long... shape) {
        return new Param(name, shape, true, to);
    }

    /** A case under construction. */
    private static final class B {
        final String label;
        final List<Param> params;
        final Set<String> forceMuon = new LinkedHashSet<>();
        final Set<String> forceAdamW = new LinkedHashSet<>();
        BiPredicate<String, long[]> muonWhen;
        boolean outputLayer = true;
        boolean allowEmptyMuon;
        MuonConfig config;
        List<String> frozen = List.of();

        B(String label, Param... params) {
            this.label = label;
            this.params = List.of(params);
        }

        B forceMuon(String... names) {
            forceMuon.addAll(Arrays.asList(names));
            return this;
        }

        B forceAdamW(String... names) {
            forceAdamW.addAll(Arrays.asList(names));
            return this;
        }

        B muonWhen(BiPredicate<String, long[]> rule) {
            muonWhen = rule;
            return this;
        }

        B outputLayer(boolean on) {
            outputLayer = on;
            return this;
        }

        B allowEmpty() {
            allowEmptyMuon = true;
            return this;
        }

        B config(MuonConfig value) {
            config = value;
            return this;
        }

        B frozen(String... names) {
            frozen = List.of(names);
            return this;
        }

        Case rows(String... rows) {
            return new Case(label, params, List.copyOf(forceMuon), List.copyOf(forceAdamW), muonWhen, outputLayer,
                    allowEmptyMuon, config, List.of(rows), frozen, null);
        }

        Case refused(String message) {
            return new Case(label, params, List.copyOf(forceMuon), List.copyOf(forceAdamW), muonWhen, outputLayer,
                    allowEmptyMuon, config, null, frozen, message);
        }
    }

    private static Param[] mlp() {
        return new Param[] {p("fc1.weight", 16, 8), p("fc1.bias", 16), p("fc2.weight", 16, 16), p("fc2.bias", 16),
                p("fc3.weight", 4, 16), p("fc3.bias", 4)};
    }

    /**
     * Every case.
     *
     * @return the cases
     */
    public static List<Case> all() {
        List<Case> cases = new ArrayList<>();
        cases.add(new B("an MLP: hidden layers on Muon, the last layer and the biases on AdamW", mlp()).rows(
                "{fc1.weight} MUON hidden matrix",
                "{fc1.bias} ADAMW fewer than 2 dims",
                "{fc2.weight} MUON hidden matrix",
                "{fc2.bias} ADAMW fewer than 2 dims",
                "{fc3.weight} ADAMW output layer (last matrix)",
                "{fc3.bias} ADAMW fewer than 2 dims"));
        cases.add(new B("one matrix (batchFlatten + Linear(10)): it stays on Muon, and the table says why",
                p("linear.weight", 10, 784), p("linear.bias", 10)).rows(
                "{linear.weight} MUON only matrix on Muon (the output-layer rule keeps it)",
                "{linear.bias} ADAMW fewer than 2 dims"));
        cases.add(new B("an embedding and a head by name", p("embed.weight", 10, 8), p("body.weight", 8, 8),
                p("body.bias", 8), p("head.weight", 3, 8)).rows(
                "{embed.weight} ADAMW embedding or head ('embed')",
                "{body.weight} MUON hidden matrix",
                "{body.bias} ADAMW fewer than 2 dims",
                "{head.weight} ADAMW output head ('head')"));
        cases.add(new B("a conv filter flattened, a norm, frozen statistics, the classifier",
                p("conv.weight", 4, 3, 3, 3), p("conv.bias", 4), p("norm.gamma", 4), p("norm.beta", 4),
                frozen("norm.runningMean", 4), frozen("norm.runningVar", 4), p("linear.weight", 10, 36),
                p("linear.bias", 10)).frozen("{norm.runningMean}", "{norm.runningVar}").rows(
                "{conv.weight} MUON hidden matrix",
                "{conv.bias} ADAMW fewer than 2 dims",
                "{norm.gamma} ADAMW fewer than 2 dims",
                "{norm.beta} ADAMW fewer than 2 dims",
                "{linear.weight} ADAMW output layer (last matrix)",
                "{linear.bias} ADAMW fewer than 2 dims"));
        cases.add(new B("a shared tensor: on AdamW once, under its first name", p("body.weight", 4, 4),
                p("body.bias", 4), p("a.weight", 4, 4), tied("b.weight", "a.weight", 4, 4)).rows(
                "{body.weight} MUON hidden matrix",
                "{body.bias} ADAMW fewer than 2 dims",
                "{a.weight} ADAMW tied weights",
                "{b.weight} ADAMW tied to '{a.weight}' (counted once)"));
        cases.add(new B("overrides win over the rules", mlp()).forceAdamW("fc1.weight").forceMuon("fc3.weight").rows(
                "{fc1.weight} ADAMW {forceAdamW}",
                "{fc1.bias} ADAMW fewer than 2 dims",
                "{fc2.weight} MUON hidden matrix",
                "{fc2.bias} ADAMW fewer than 2 dims",
                "{fc3.weight} MUON {forceMuon}",
                "{fc3.bias} ADAMW fewer than 2 dims"));
        cases.add(new B("a custom rule decides alone", mlp())
                .muonWhen((name, shape) -> shape.length == 2 && !name.startsWith("fc2")).rows(
                "{fc1.weight} MUON {muonWhen} rule",
                "{fc1.bias} ADAMW {muonWhen} rule",
                "{fc2.weight} ADAMW {muonWhen} rule",
                "{fc2.bias} ADAMW {muonWhen} rule",
                "{fc3.weight} MUON {muonWhen} rule",
                "{fc3.bias} ADAMW {muonWhen} rule"));
        cases.add(new B("the output-layer rule turned off", mlp()).outputLayer(false).rows(
                "{fc1.weight} MUON hidden matrix",
                "{fc1.bias} ADAMW fewer than 2 dims",
                "{fc2.weight} MUON hidden matrix",
                "{fc2.bias} ADAMW fewer than 2 dims",
                "{fc3.weight} MUON hidden matrix",
                "{fc3.bias} ADAMW fewer than 2 dims"));
        cases.add(new B("a 3-D stack stays on AdamW unless forced", p("experts.weight", 2, 4, 4),
                p("fc1.weight", 4, 4), p("fc2.weight", 4, 4)).rows(
                "{experts.weight} ADAMW 3-D (force it to Muon with stacked weights allowed)",
                "{fc1.weight} MUON hidden matrix",
                "{fc2.weight} ADAMW output layer (last matrix)"));
        cases.add(new B("AdamW alone, when asked for", p("norm.gamma", 4)).allowEmpty().rows(
                "{norm.gamma} ADAMW fewer than 2 dims"));

        cases.add(new B("a bias forced to Muon", mlp()).forceMuon("fc1.bias").refused(
                "Muon only supports 2-D parameters; parameter '{fc1.bias}' has shape [16] (sent to Muon by "
                        + "{forceMuon})"));
        cases.add(new B("a stack forced to Muon without stacked weights allowed", p("experts.weight", 2, 4, 4),
                p("fc1.weight", 4, 4)).forceMuon("experts.weight").refused(
                "Muon only supports 2-D parameters; parameter '{experts.weight}' has shape [2, 4, 4]. To treat a 3-D "
                        + "parameter as a batch of 2 matrices, use MuonConfig.withStackedWeights(StackedWeights.BATCH) "
                        + "(sent to Muon by {forceMuon})"));
        cases.add(new B("a conv filter sent to Muon by a config that rejects filters", p("conv.weight", 4, 3, 3, 3),
                p("linear.weight", 10, 36)).config(MuonConfig.defaults().withLr(0.02)).refused(
                "Muon only supports 2-D parameters; parameter '{conv.weight}' has shape [4, 3, 3, 3]. To flatten a "
                        + "4-D conv filter to [4, 27], use MuonConfig.withConvWeights(ConvWeights.FLATTEN) (sent to "
                        + "Muon by the default rule as a hidden matrix; {forceAdamW}(\"{conv.weight}\") keeps it on "
                        + "AdamW)"));
        cases.add(new B("a name in both lists", mlp()).forceMuon("fc3.weight").forceAdamW("fc3.weight").refused(
                "parameter '{fc3.weight}' is in both {forceMuon} and {forceAdamW}; name it in one list only"));
        cases.add(new B("an override of no parameter", p("fc1.weight", 4, 4), p("fc1.bias", 4))
                .forceMuon("nothing").refused(
                "{forceMuon} names 'nothing', which is not a parameter; parameters are [{fc1.weight}, {fc1.bias}]"));
        cases.add(new B("an override of a frozen parameter", p("fc1.weight", 4, 4), frozen("fc2.weight", 4, 4))
                .forceAdamW("fc2.weight").refused(
                "{forceAdamW} names '{fc2.weight}', which does not require grad and is left out"));
        cases.add(new B("a shared tensor forced to Muon", p("body.weight", 4, 4), p("a.weight", 4, 4),
                tied("b.weight", "a.weight", 4, 4)).forceMuon("a.weight").refused(
                "parameter '{a.weight}' is tied to another name and tied weights go to AdamW; remove it from "
                        + "{forceMuon}"));
        cases.add(new B("nothing trainable", frozen("fc1.weight", 4, 4)).refused(
                "{source} must hold at least one parameter that requires grad, got 1 parameters, 1 frozen"));
        cases.add(new B("nothing on Muon", p("norm.gamma", 4), p("embed.weight", 10, 4)).refused(
                "no parameter was assigned to Muon, so this would train with AdamW alone. Muon takes 2-D and 4-D "
                        + "weights whose names do not look like an embedding or a head; check the names below, send "
                        + "parameters with {forceMuon}(..) or {muonWhen}(..), or call {allowEmptyMuon}(true) if AdamW "
                        + "alone is intended."));
        return cases;
    }

    /**
     * The parameters of a case grouped by module path, in order: what a module tree of the case holds.
     *
     * @param c the case
     * @return the direct parameters of each module path ({@code ""} for the top), in first-appearance order
     */
    public static Map<String, List<Param>> byModule(Case c) {
        Map<String, List<Param>> out = new LinkedHashMap<>();
        for (Param param : c.params()) {
            int dot = param.name().lastIndexOf('.');
            out.computeIfAbsent(dot < 0 ? "" : param.name().substring(0, dot), k -> new ArrayList<>()).add(param);
        }
        return out;
    }
}
