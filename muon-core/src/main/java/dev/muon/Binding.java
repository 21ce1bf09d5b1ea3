package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.Locale;

/**
 * A module that maps muon-core's bindings-free rules to its own tensors, with the words its users write: the names
 * of its settings and of what holds the parameters. The shared classification ({@link Classification}) and the
 * assignment table ({@link AssignmentTable}) speak through it, so that one message reads
 * {@code forceMuon names 'fc9.weight', ...} to a bytedeco user and {@code optForceMuon names 'fc9_weight', ...} to a
 * DJL user, from one text.
 *
 * <pre>{@code
 * Binding.MUON_DJL.setting("forceMuon");   // "optForceMuon"
 * }</pre>
 */
public enum Binding {
    /** muon-core, on libtorch tensors through the bytedeco bindings: settings as its builders name them. */
    MUON_CORE("muon-core", "namedParameters", "requires_grad == false"),
    /** muon-djl, on DJL's arrays: settings as DJL's builders spell them ({@code opt} + the name). */
    MUON_DJL("muon-djl", "the block", "requires grad false");

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final String module;
    private final String source;
    private final String frozen;

    Binding(String module, String source, String frozen) {
        this.module = module;
        this.source = source;
        this.frozen = frozen;
    }

    /**
     * The module's name in messages, e.g. {@code muon-djl}.
     *
     * @return the name
     */
    public String module() {
        return module;
    }

    /**
     * What holds the parameters a classification is given, as the module's users know it.
     *
     * @return e.g. {@code namedParameters} or {@code the block}
     */
    public String source() {
        return source;
    }

    /**
     * Why a left-out parameter is left out, in the module's words.
     *
     * @return e.g. {@code requires_grad == false}
     */
    public String frozenWhy() {
        return frozen;
    }

    /**
     * A setting's name as this module's builders spell it: muon-core's name ({@code forceMuon},
     * {@code allowEmptyMuon(true)}) for muon-core, {@code opt} and the name capitalized for muon-djl.
     *
     * @param coreName the setting as muon-core's builders name it
     * @return the module's name for it
     */
    public String setting(String coreName) {
        if (this == MUON_CORE || coreName.isEmpty()) {
            return coreName;
        }
        return "opt" + coreName.substring(0, 1).toUpperCase(Locale.ROOT) + coreName.substring(1);
    }
}
