package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import dev.muon.NonFinitePolicy;

import java.util.function.Consumer;
import java.util.function.Function;

/**
 * What {@link Muon} and {@link MuonAdamW} share as DJL optimizers that bind themselves to the model they train: the
 * binding ({@link ModelBinding}) and the driver of DJL's calls ({@link StepDriver}), made once here; the training
 * config that registers the optimizer as a training listener, and the listener's calls, of which only the first does
 * anything; and the counts of the steps.
 */
abstract class BoundOptimizer extends Optimizer implements TrainingListener {
    /** The binding of this optimizer to its block. */
    final ModelBinding binding;
    /** What every call of {@link #update} does around the update itself; it counts the steps. */
    final StepDriver driver;
    /** The builder's {@code optBeginNumUpdate}, which a checkpoint's step must match when set. */
    final int beginNumUpdate;

    /**
     * Makes the binding and the driver; the subclass checks its settings and binds a block given at build.
     *
     * @param builder        DJL's settings (rescale, clip, weight decays)
     * @param name           the optimizer's class's simple name, for messages and log lines
     * @param policy         what a non-finite gradient does
     * @param beginNumUpdate the steps applied before this run
     */
    BoundOptimizer(OptimizerBuilder<?> builder, String name, NonFinitePolicy policy, int beginNumUpdate) {
        super(builder);
        this.binding = new ModelBinding(name, this::checkNames, this::setUp);
        this.driver = new StepDriver(name, policy, binding::model, beginNumUpdate);
        this.beginNumUpdate = beginNumUpdate;
    }

    /**
     * Checks what the block's names alone allow, when the optimizer binds to a block; nothing by default.
     *
     * @param model the block's parameters
     * @throws IllegalArgumentException where the names are refused
     */
    void checkNames(ModelParameters model) {
    }

    /**
     * Checks the bound block's parameters once they have shapes, and sets the optimizer up for them
     * ({@link ModelBinding.Setup}).
     *
     * @param model   the block's parameters
     * @param dtypeOf each parameter's dtype
     * @param arrayOf each parameter's array
     * @throws IllegalArgumentException where the parameters are refused; nothing is set up then
     */
    abstract void setUp(ModelParameters model, Function<ModelParameters.Entry, DataType> dtypeOf,
                        Function<ModelParameters.Entry, NDArray> arrayOf);

    /**
     * Runs an update on the gradient as DJL's optimizers take it ({@link StepDriver#prepared}, with this optimizer's
     * {@code rescaleGrad} and {@code clipGrad}), inside a scope that frees every temporary of the update.
     *
     * @param grad   the gradient, never written
     * @param update the update, given the prepared gradient
     */
    void withPreparedGradient(NDArray grad, Consumer<NDArray> update) {
        try (NDScope scope = new NDScope()) {
            scope.suppressNotUsedWarning();
            update.accept(StepDriver.prepared(grad, rescaleGrad, clipGrad));
        }
    }

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
        binding.bind(trainer.getModel().getBlock());
    }

    /**
     * The steps applied so far (skipped ones not counted).
     *
     * @return the count
     */
    public long stepCount() {
        return driver.stepCount();
    }

    /**
     * The steps skipped whole because a gradient held NaN or Inf ({@link NonFinitePolicy#SKIP}).
     *
     * @return the count
     */
    public long skippedSteps() {
        return driver.skippedSteps();
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
