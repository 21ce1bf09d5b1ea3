/**
 * Muon for DJL (Deep Java Library) users: {@link dev.muon.djl.Muon} and {@link dev.muon.djl.MuonAdamW} are DJL
 * {@code Optimizer}s, written against DJL's {@code NDArray} API alone, for any model that trains on DJL's PyTorch
 * engine. Swapping DJL's default {@code Adam} for the hybrid is one line, where DJL builds it:
 * <pre>{@code
 * // return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
 * return MuonAdamW.builder().build().trainingConfig(Loss.softmaxCrossEntropyLoss())
 * }</pre>
 * The config holds the optimizer twice, as DJL's optimizer and as a training listener: DJL hands an optimizer nothing
 * but parameter ids before its first update, and the model only to training listeners, when the trainer is created.
 * Bound there, the optimizer classifies and checks the parameters when the trainer is initialized, before any data is
 * read.
 *
 * <h2>One semantics, no copy: muon-core without its bindings</h2>
 * The hyperparameters and their validation ({@link dev.muon.MuonConfig}, {@link dev.muon.AdamWConfig},
 * {@link dev.muon.NorMuonConfig}), the lr adjustment ({@link dev.muon.AdjustLr}), the coefficient schedules
 * ({@link dev.muon.orthogonalize.CoefficientSchedule}), the non-finite policy ({@link dev.muon.NonFinitePolicy}),
 * the classification that sends a parameter to Muon or AdamW, with its messages and table
 * ({@link dev.muon.Classification}, {@link dev.muon.AssignmentRule}, {@link dev.muon.AssignmentTable}) and the
 * drop-in's Muon config ({@link dev.muon.MuonConfig#dropIn}) are muon-core's own classes, used here as they are, so
 * that the two modules cannot drift apart. This module depends on muon-core,
 * whose bytedeco dependencies are {@code provided} and so never reach a DJL user's class path, and those classes
 * hold no libtorch type in their fields, signatures that run, or static initializers (the one call there,
 * {@code TorchNatives.extract()}, which readies libtorch's natives for bytedeco users, does nothing where JavaCPP
 * is absent): they load and work with no bytedeco class present (this module's tests run that way and check it).
 *
 * <p>Why not a third, dependency-free module for them: it would split muon-core's public package
 * {@code dev.muon} across two jars (a split package, which JPMS refuses), or move the configs every bytedeco user
 * imports to a new package; keeping them in muon-core costs this module nothing but a jar whose other classes
 * stay unloaded. Why never bytedeco here: DJL's libtorch and bytedeco's cannot share a JVM, in either order
 * (the same library names; the second load fails with undefined symbols or aborts the JVM), so this module
 * reimplements only what touches tensors: the Newton–Schulz iteration, the Muon and AdamW steps, and the
 * bookkeeping that DJL's call order needs.
 *
 * <h2>What differs from muon-core</h2>
 * <ul>
 *   <li>Newton–Schulz runs in float32 (or float64), never bfloat16: DJL 0.36.0's conversion to bfloat16 aborts
 *       the JVM, so {@code NsPrecision.BFLOAT16} and bfloat16 parameters are refused.</li>
 *   <li>Newton–Schulz runs muon-core's native float32 symmetric and Gram iterations on the CPU where they apply
 *       (the library loaded without JavaCPP, {@link dev.muon.orthogonalize.BufferKernels}, reading DJL's arrays as
 *       direct buffers), DJL's matrix products elsewhere; {@code NsAlgorithm.GRAM} off the CPU and the exact SVD are
 *       refused.</li>
 *   <li>Checkpoints are muon-core's format ({@link dev.muon.state.CheckpointBytes}); no PyTorch state files, no
 *       distributed training, row splits or QK-Clip; each parameter runs its own iteration (DJL hands them over one
 *       by one), so {@code batchSameShape} changes nothing.</li>
 * </ul>
 *
 * <h2>DJL's call order</h2>
 * DJL has no call per step: its {@code ParameterStore} calls {@code update} once per parameter and device, in
 * hash order. Both optimizers keep state per parameter and device, count steps themselves (a step is a run of
 * calls in which no parameter copy repeats), check every gradient of the block at a step's first call, and zero
 * each gradient after its update as DJL's own optimizers do. Each update runs in an {@code NDScope}; the state is
 * created outside it and owned by a child of the parameter's manager.
 */
package dev.muon.djl;
