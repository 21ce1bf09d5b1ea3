package dev.muon;

/**
 * NorMuon's neuron-wise normalization stage ({@link NeuronNormalization}): each row of the block's {@code O} is
 * divided by the root of its running second moment and the block is rescaled to unit RMS. A row block uses the
 * rows of the second moment it covers, and is normalized on its own, as each head of a split is in Dion.
 */
final class NorMuonStage implements UpdateStage {
    private final NeuronNormalization normalization;

    NorMuonStage(NeuronNormalization normalization) {
        this.normalization = normalization;
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterUpdate.Block block = update.block;
        block.o = normalization.normalize(block.o, block.secondMoment(update.state.secondMomentForUpdate()),
                update.config.norMuon());
    }
}
