package dev.muon.djl;

import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;

/**
 * What {@link Muon} and {@link MuonAdamW} share as DJL optimizers that bind themselves to the model they train
 * ({@link ModelBinding}): the training config that registers the optimizer as a training listener, and the
 * listener's calls, of which only the first does anything.
 */
abstract class BoundOptimizer extends Optimizer implements TrainingListener {
    BoundOptimizer(OptimizerBuilder<?> builder) {
        super(builder);
    }

    /**
     * The binding of this optimizer to its block.
     *
     * @return the binding
     */
    abstract ModelBinding binding();

    /**
     * A DJL training config that trains with this optimizer: {@code new DefaultTrainingConfig(loss)} with this
     * optimizer in place of DJL's default {@code Adam} and registered as a training listener, which binds it to the
     * model when the trainer is created and checks the parameters when the trainer is initialized. Chain the rest of
     * the config as before.
     *
     * @param loss the loss, as {@code new DefaultTrainingConfig(loss)} takes it
     * @return the config
     */
    public DefaultTrainingConfig trainingConfig(Loss loss) {
        return new DefaultTrainingConfig(loss).optOptimizer(this).addTrainingListeners(this);
    }

    /**
     * Binds this optimizer to the trainer's model (DJL calls this from the {@code Trainer}'s constructor when the
     * optimizer is a training listener): checks what can be checked by name now (MuonAdamW's override names), and
     * classifies and checks the parameters when {@code trainer.initialize} creates them, or now if they exist.
     *
     * @param trainer the trainer being created
     * @throws IllegalStateException    if this optimizer is bound to another model's block
     * @throws IllegalArgumentException if the names or parameters are refused
     */
    @Override
    public void onTrainingBegin(Trainer trainer) {
        binding().bind(trainer.getModel().getBlock());
    }

    /**
     * Nothing: the optimizer counts its own steps.
     *
     * @param trainer the trainer
     */
    @Override
    public void onEpoch(Trainer trainer) {
    }

    /**
     * Nothing: the optimizer counts its own steps.
     *
     * @param trainer   the trainer
     * @param batchData the batch
     */
    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
    }

    /**
     * Nothing.
     *
     * @param trainer   the trainer
     * @param batchData the batch
     */
    @Override
    public void onValidationBatch(Trainer trainer, BatchData batchData) {
    }

    /**
     * Nothing: the state stays with the optimizer (and its block), for a later trainer of the same model.
     *
     * @param trainer the trainer
     */
    @Override
    public void onTrainingEnd(Trainer trainer) {
    }
}
