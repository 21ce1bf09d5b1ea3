package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.ConformanceMatrix;
import dev.muon.golden.ConformanceMatrix.Dtype;
import dev.muon.golden.ConformanceMatrix.Row;
import dev.muon.golden.Float64Update;
import dev.muon.golden.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

/**
 * One cell of muon-core's conformance matrix, run as a libtorch training loop runs it, in one process or as one
 * rank of a group: {@link ConformanceMatrixTest} runs every cell at world size 1, {@code ConformanceMatrixWorker} at
 * world size 2. Two parameters of the row's shape (so that a group of two shards them, one owner each), the same
 * gradients on every rank, {@code backward()} of a loss whose gradient is the drawn one, then {@code step()}.
 */
public final class ConformanceCells {
    /** Where the Muon state lives in a column. */
    public enum Place { BESIDE, FILES }

    private static final int PARAMETERS = 2;

    private ConformanceCells() {
    }

    /**
     * What muon-core refuses, by cell, as the start of the message: Hyperball with cautious decay, and Muown with
     * bfloat16 momentum or a weight hook, refused when the config is made (cautious decay is a weight decay, which
     * the sphere replaces; Muown keeps its momentum in float32, and its next step would undo a hook); Muown on a conv filter or a stack, refused at build (it is
     * defined for 2-D weights); nothing else: every element runs in every dtype, place and world size.
     *
     * @param row   the row
     * @param dtype the column's dtype
     * @return the refusal's start, or null when the cell runs
     */
    /** The weight hooks other than Hyperball, by their rows' names, with their settings' names. */
    private static final String[][] MUOWN_HOOKS = {{"RadialBrake", "radialBrake"},
            {"RelativeUpdate", "relativeUpdate"}, {"update floor", "updateFloor"},
            {"update floor per row", "updateFloor"}};

    public static String refusal(Row row, Dtype dtype) {
        if (row.has("cautious decay") && (row.has("Hyperball") || row.has("Hyperball radius 3"))) {
            return "cautiousWeightDecay must be false with hyperball";
        }
        if (row.has("Muown") && row.has("bfloat16 momentum")) {
            return "momentumPrecision must be PARAMETER with muown";
        }
        if (row.has("Muown") && (row.has("Hyperball") || row.has("Hyperball radius 3"))) {
            return "hyperball must be off with muown";
        }
        if (row.has("Muown")) {
            for (String[] hook : MUOWN_HOOKS) {
                if (row.has(hook[0])) {
                    return hook[1] + " must be off with muown";
                }
            }
        }
        if (row.has("Muown") && (row.has("conv filter") || row.has("stack"))) {
            return "muown needs 2-D parameters";
        }
        return null;
    }

    /**
     * Runs a cell: matches the reference within its bound, or is refused as {@link #refusal} declares with nothing
     * changed.
     *
     * @param row   the row
     * @param dtype the parameters' dtype
     * @param place where the Muon state lives
     * @param dir   an empty directory for the state files
     * @param group the group to shard over, or null for one process
     * @return null when the cell conforms, else what is wrong
     */
    public static String run(Row row, Dtype dtype, Place place, Path dir, DistributedGroup group) {
        String refusal = refusal(row, dtype);
        if (row.config() == null) {
            return refusal != null && row.refusal().startsWith(refusal) ? null
                    : "the config refused a cell the table says runs: " + row.refusal();
        }
        ScalarType type = scalarType(dtype);
        Random random = new Random(row.name().hashCode() * 31L + dtype.ordinal());
        List<Tensor> params = new ArrayList<>();
        List<Float64Update> references = new ArrayList<>();
        for (int i = 0; i < PARAMETERS; i++) {
            Tensor p = Tensors.of(Float64Update.gaussian(random, row.shape()), row.shape(), ScalarType.Double)
                    .to(type).requires_grad_(true);
            params.add(p);
            references.add(ConformanceMatrix.reference(row, Tensors.values(p.to(ScalarType.Double))));
        }
        StateStorage storage = place == Place.FILES ? StateStorage.files(dir) : StateStorage.withParameter();
        Muon.Builder builder = Muon.builder().addGroup(params, row.config()).stateStorage(storage)
                .names(List.of("hidden.0.weight", "hidden.1.weight"));
        if (group != null) {
            builder.distributed(group, ShardingConfig.defaults().withAverageGradients(false));
        }
        if (refusal != null) {
            List<Tensor> before = params.stream().map(p -> p.detach().clone()).toList();
            try {
                builder.build();
                return "built, where the table says it is refused with '" + refusal + "'";
            } catch (IllegalArgumentException e) {
                for (int i = 0; i < PARAMETERS; i++) {
                    if (!before.get(i).equal(params.get(i).detach())) {
                        return "the refused build changed a parameter";
                    }
                }
                return e.getMessage().contains(refusal) ? null : "refused with another message: " + e.getMessage();
            }
        }
        try (Muon muon = builder.build()) {
            for (int step = 1; step <= ConformanceMatrix.STEPS; step++) {
                try (PointerScope scope = new PointerScope()) {
                    for (int i = 0; i < PARAMETERS; i++) {
                        Tensor p = params.get(i);
                        Tensor g = Tensors.of(Float64Update.gaussian(random, row.shape()), row.shape(),
                                ScalarType.Double).to(type);
                        references.get(i).step(Tensors.values(g.to(ScalarType.Double)));
                        if (p.grad().defined()) {
                            p.mutable_grad().zero_();
                        }
                        // The driver's path: the loss Σ p ⊙ g has gradient g, which backward() leaves in p.grad.
                        p.mul(g).sum().backward();
                    }
                    muon.step();
                }
            }
        }
        for (int i = 0; i < PARAMETERS; i++) {
            Tensor p = params.get(i);
            if (p.scalar_type().value != type.value) {
                return "the parameter's dtype changed";
            }
            double error = Tensors.relativeError(Tensors.values(p.to(ScalarType.Double)), references.get(i).p);
            double bound = dtype.bound(row.config());
            if (!(error <= bound)) {
                return "parameter " + i + " rel error " + error + " (bound " + bound + ")";
            }
        }
        if (place == Place.FILES) {
            try (Stream<Path> left = Files.list(dir)) {
                if (left.findAny().isPresent()) {
                    return "close() left state files";
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return null;
    }

    private static ScalarType scalarType(Dtype dtype) {
        return switch (dtype) {
            case FLOAT64 -> ScalarType.Double;
            case FLOAT32 -> ScalarType.Float;
            case BFLOAT16 -> ScalarType.BFloat16;
            case FLOAT16 -> ScalarType.Half;
        };
    }
}
