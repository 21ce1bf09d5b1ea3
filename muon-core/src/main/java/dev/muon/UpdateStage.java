package dev.muon;

/**
 * One stage of a Muon parameter's update. A parameter's stages are chosen once, when the optimizer is built, from
 * its group's config, its layout and its device ({@link UpdatePlan}); the step runs them in order:
 * <pre>
 *   parameter stages:  momentum (and Nesterov) → layout (whole matrix, stack, row blocks)
 *   block stages:      orthogonalize → NorMuon normalization → lr scale → weight decay and apply
 * </pre>
 * Parameter stages run once per parameter; block stages once per block the layout made (one for a whole matrix or
 * a stack, one per row block or one stack of equal row blocks for a row split). A variant of the update is a stage,
 * not a branch in the step: see {@code docs/architecture.md}.
 */
interface UpdateStage {
    /**
     * Runs this stage on one parameter's update in progress.
     *
     * @param update the update: its parameter, this step's settings, and what earlier stages left
     */
    void run(ParameterUpdate update);
}
