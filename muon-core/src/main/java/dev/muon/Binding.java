package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.Locale;
import java.util.Objects;

/**
 * A module that maps muon-core's bindings-free rules to its own tensors, with the words its users write: the names
 * of its settings and of what holds the parameters. The shared classification ({@link Classification}) and the
 * assignment table ({@link AssignmentTable}) speak through it, so that one message reads
 * {@code forceMuon names 'fc9.weight', ...} to a bytedeco user and {@code optForceMuon names 'fc9_weight', ...} to a
 * DJL user, from one text. It is open: a binding defines its own value, as muon-djl does, and muon-core needs no
 * edit for it (docs/architecture.md, "Adding a binding").
 *
 * <pre>{@code
 * Binding djl = new Binding("muon-djl", "the block", "requires grad false", "opt");
 * djl.setting("forceMuon");   // "optForceMuon"
 * }</pre>
 *
 * @param module        the module's name, as messages name it ({@code muon-djl})
 * @param source        what holds the parameters, as the table's heading names it ({@code the block})
 * @param frozenWhy     how a frozen parameter is described ({@code requires grad false})
 * @param settingPrefix the prefix of the binding's builder methods before the capitalized core name ({@code opt}),
 *                      or empty where they are the core names
 */
public record Binding(String module, String source, String frozenWhy, String settingPrefix) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** muon-core, on libtorch tensors through the bytedeco bindings: settings as its builders name them. */
    public static final Binding MUON_CORE = new Binding("muon-core", "namedParameters", "requires_grad == false", "");

    /**
     * Checks every field.
     *
     * @throws NullPointerException     if a field is null
     * @throws IllegalArgumentException if the module's name is blank
     */
    public Binding {
        Objects.requireNonNull(module, "module must not be null");
        Objects.requireNonNull(source, "source must not be null");
        Objects.requireNonNull(frozenWhy, "frozenWhy must not be null");
        Objects.requireNonNull(settingPrefix, "settingPrefix must not be null");
        if (module.isBlank()) {
            throw new IllegalArgumentException("module must not be blank, got '" + module + "'");
        }
    }

    /**
     * A muon-core setting's name as this binding's users write it.
     *
     * @param coreName the name in muon-core ({@code forceMuon}), or empty
     * @return the binding's name ({@code optForceMuon} with the prefix {@code opt})
     */
    public String setting(String coreName) {
        if (settingPrefix.isEmpty() || coreName.isEmpty()) {
            return coreName;
        }
        return settingPrefix + coreName.substring(0, 1).toUpperCase(Locale.ROOT) + coreName.substring(1);
    }
}
