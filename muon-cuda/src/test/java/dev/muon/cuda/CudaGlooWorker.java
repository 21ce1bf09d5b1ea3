package dev.muon.cuda;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of {@link CudaGlooGpuTest}: a {@link Muon} over CUDA parameters, sharded over a Gloo group on 127.0.0.1,
 * stepped with the same gradients on every rank (no averaging), then every parameter written to
 * {@code DIR/rank<r>.bin} as doubles; {@link #run} without a group is the single-process reference.
 *
 * <p>Arguments: {@code rank world port dir}.
 */
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
final class CudaGlooWorker {
    static final int STEPS = 5;
    static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16);

    private CudaGlooWorker() {
    }

    public static void main(String[] args) {
        int rank = Integer.parseInt(args[0]);
        int world = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        Path dir = Path.of(args[3]);
        try (DistributedGroup group = DistributedGroup.join(GroupConfig.of("127.0.0.1", port, rank, world)
                .withTimeout(Duration.ofSeconds(60)))) {
            write(run(group), dir.resolve("rank" + rank + ".bin"));
        }
        System.out.println("CudaGlooWorker: rank " + rank + " of " + world + " done");
    }

    /** Steps the parameters, sharded over {@code group} unless it is null; returns their values. */
    static List<double[]> run(DistributedGroup group) {
        try (PointerScope scope = new PointerScope()) {
            TensorOptions cuda = new TensorOptions(ScalarType.Float)
                    .device(new DeviceOptional(new Device(torch.DeviceType.CUDA, (byte) 0)));
            torch.manual_seed(11);
            List<Tensor> params = new ArrayList<>();
            for (long[] shape : List.of(new long[]{256, 128}, new long[]{128, 256}, new long[]{128, 256},
                    new long[]{192, 192}, new long[]{512, 512})) {
                params.add(torch.randn(shape, cuda).requires_grad_(true));
            }
            Muon.Builder builder = Muon.builder().addGroup(params, CONFIG);
            if (group != null) {
                builder.distributed(group, ShardingConfig.defaults().withAverageGradients(false));
            }
            Muon muon = builder.build();
            for (int step = 0; step < STEPS; step++) {
                torch.manual_seed(100 + step);
                for (Tensor p : params) {
                    p.mutable_grad().put(torch.randn(p.shape(), cuda));
                }
                muon.step();
            }
            List<double[]> values = new ArrayList<>();
            for (Tensor p : params) {
                values.add(Tensors.values(p.detach().cpu()));
            }
            return values;
        }
    }

    private static void write(List<double[]> values, Path file) {
        try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(file))) {
            out.writeInt(values.size());
            for (double[] v : values) {
                out.writeInt(v.length);
                for (double x : v) {
                    out.writeDouble(x);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
