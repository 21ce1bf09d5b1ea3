package dev.muon;

/**
 * The orthogonalization stage: {@code O = NS(U)} for the block, on the parameter's orthogonalizer. The result is a
 * view of the orthogonalizer's workspace, used by the later stages before the next call for its shape. A
 * same-shape batch runs this stage once for all its members instead ({@link Muon}).
 */
final class OrthogonalizeStage implements UpdateStage {
    static final OrthogonalizeStage INSTANCE = new OrthogonalizeStage();

    private OrthogonalizeStage() {
    }

    @Override
    public void run(ParameterUpdate update) {
        update.block.o = update.state.orthogonalizer.orthogonalize(update.block.u);
    }
}
