package dev.muon.cuda;

import dev.muon.AdamWState;
import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.cuda.internal.CudaFusedUpdateKernelsProvider;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static dev.muon.golden.ErrorMeasures.recoveredUpdate;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every golden case of {@code shared/golden} (through muon-core's test jar) on {@code cuda:0}: the {@code muon_*}
 * trajectories through {@link Muon}, the {@code hybrid_*} ones through {@link MuonAdamW}, and the {@code ns_*}
 * iterations through the orthogonalizer a CUDA parameter gets, each with a float32 iteration and with a bfloat16
 * one, the latter with the fused momentum and update ({@link CudaFusedUpdateKernelsProvider}) and without
 * ({@value CudaSupport#DISABLE_FUSED_UPDATES_PROPERTY}). Tolerances are the golden README's: float32 1e-5 (rel on
 * state and updates, abs on parameters), bfloat16 0.25 rel on the update and {@code 0.2·lr·steps} abs on Muon's
 * parameters, the float32 buffers 1e-5 rel in every setting. Skips without a GPU, printing why.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class CudaGoldenGpuTest {

    /** An iteration precision and whether the fused stages may serve the parameters. */
    enum Setting {
        FLOAT32(NsPrecision.FLOAT32, false), BF16_FUSED(NsPrecision.BFLOAT16, true),
        BF16_LIBTORCH_OPS(NsPrecision.BFLOAT16, false);

        final NsPrecision ns;
        final boolean fused;

        Setting(NsPrecision ns, boolean fused) {
            this.ns = ns;
            this.fused = fused;
        }

        boolean bf16() {
            return ns == NsPrecision.BFLOAT16;
        }

        /** Builds with the fused stages off unless this setting wants them. */
        <T> T build(Supplier<T> build) {
            if (fused) {
                return build.get();
            }
            System.setProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY, "true");
            try {
                return build.get();
            } finally {
                System.clearProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY);
            }
        }
    }

    private static Device cuda() {
        return new Device(torch.DeviceType.CUDA, (byte) 0);
    }

    private static Tensor onCuda(GoldenCase.Entry entry) {
        return Tensors.of(entry, ScalarType.Float).to(cuda(), ScalarType.Float);
    }

    static Stream<Arguments> muonCases() {
        return GoldenReader.casesWith("muon_", (Object[]) Setting.values());
    }

    static Stream<Arguments> hybridCases() {
        return GoldenReader.casesWith("hybrid_", (Object[]) Setting.values());
    }

    static Stream<Arguments> nsCases() {
        return GoldenReader.casesWith("ns_", NsPrecision.FLOAT32, NsPrecision.BFLOAT16);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("nsCases")
    void newtonSchulz_onCuda_matchesGolden(GoldenCase c, NsPrecision precision) {
        try (PointerScope scope = new PointerScope()) {
            NewtonSchulzConfig config = GoldenConfigs.newtonSchulz(c, precision);
            // What a CUDA parameter gets: the kernels' orthogonalizer where the provider serves it, else libtorch's.
            Orthogonalizer o = new CudaOrthogonalizerProvider().create(config, cuda())
                    .orElseGet(() -> new NewtonSchulz(config));
            Tensor out = o.orthogonalize(onCuda(c.tensor("input", null, 0)));
            assertEquals(torch.DeviceType.CUDA.value, out.device().type().value);
            double error = Tensors.relativeError(out.cpu(), c.tensor("expected", null, 0).data());
            double tolerance = precision == NsPrecision.BFLOAT16 ? 0.25 : 1e-5;
            System.out.printf("CudaGoldenGpuTest: %s %s %s rel error %.3e%n", c.name(), precision,
                    o.getClass().getSimpleName(), error);
            assertTrue(error <= tolerance, c.name() + " " + precision + ": rel error " + error);
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("muonCases")
    void muonTrajectory_onCuda_matchesGolden(GoldenCase c, Setting setting) {
        try (PointerScope scope = new PointerScope()) {
            MuonConfig config = GoldenConfigs.muon(c, setting.ns);
            List<Tensor> params = new ArrayList<>();
            for (GoldenCase.Param p : c.params()) {
                params.add(onCuda(c.tensor("param", p.name(), 0)).requires_grad_(true));
            }
            Muon muon = setting.build(() -> Muon.of(params, config));
            assertFusedAsExpected(setting, params);
            int steps = c.integer("num_steps");
            double paramTolerance = setting.bf16() ? 0.2 * config.lr() * steps : 1e-5;
            double updateTolerance = setting.bf16() ? 0.25 : 1e-5;
            for (int k = 1; k <= steps; k++) {
                List<double[]> before = new ArrayList<>();
                for (int i = 0; i < params.size(); i++) {
                    before.add(Tensors.values(params.get(i).cpu()));
                    params.get(i).mutable_grad().put(onCuda(c.tensor("grad", c.params().get(i).name(), k)));
                }
                muon.step();
                for (int i = 0; i < params.size(); i++) {
                    GoldenCase.Param p = c.params().get(i);
                    String where = c.name() + " " + setting + " step " + k + " " + p.name();
                    Tensor param = params.get(i);
                    double bufferError = Tensors.relativeError(muon.momentumBuffer(param).orElseThrow().cpu(),
                            c.tensor("momentum_buffer", p.name(), k).data());
                    assertTrue(bufferError <= 1e-5, where + ": momentum_buffer rel error " + bufferError);
                    double[] after = Tensors.values(param.cpu());
                    double updateError = Tensors.relativeError(recoveredUpdate(before.get(i), after, config,
                            p.shape()), c.tensor("orthogonalized_update", p.name(), k).data());
                    assertTrue(updateError <= updateTolerance, where + ": orthogonalized_update rel error "
                            + updateError);
                    double paramError = Tensors.maxAbsError(param.cpu(), c.tensor("param", p.name(), k).data());
                    assertTrue(paramError <= paramTolerance, where + ": param abs error " + paramError);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("hybridCases")
    void hybridTrajectory_onCuda_matchesGolden(GoldenCase c, Setting setting) {
        try (PointerScope scope = new PointerScope()) {
            Map<String, Tensor> named = new LinkedHashMap<>();
            for (GoldenCase.Param p : c.params()) {
                named.put(p.name(), onCuda(c.tensor("param", p.name(), 0)).requires_grad_(true));
            }
            MuonConfig muonConfig = GoldenConfigs.muon(c, setting.ns);
            MuonAdamW opt = setting.build(() -> MuonAdamW.builder(named).muon(muonConfig)
                    .adamW(GoldenConfigs.adamW(c)).build());
            List<Tensor> muonParams = new ArrayList<>();
            for (GoldenCase.Param p : c.params()) {
                if (p.optimizer().equals("muon")) {
                    muonParams.add(named.get(p.name()));
                }
            }
            assertFusedAsExpected(setting, muonParams);
            int steps = c.integer("num_steps");
            for (int k = 1; k <= steps; k++) {
                for (GoldenCase.Param p : c.params()) {
                    named.get(p.name()).mutable_grad().put(onCuda(c.tensor("grad", p.name(), k)));
                }
                opt.step();
                for (GoldenCase.Param p : c.params()) {
                    String where = c.name() + " " + setting + " step " + k + " " + p.name();
                    boolean muon = p.optimizer().equals("muon");
                    double paramTolerance = muon && setting.bf16() ? 0.2 * muonConfig.lr() * steps : 1e-5;
                    double paramError = Tensors.maxAbsError(named.get(p.name()).cpu(),
                            c.tensor("param", p.name(), k).data());
                    assertTrue(paramError <= paramTolerance, where + ": param abs error " + paramError);
                    if (muon) {
                        double e = Tensors.relativeError(opt.muonState(p.name()).orElseThrow().momentum().cpu(),
                                c.tensor("momentum_buffer", p.name(), k).data());
                        assertTrue(e <= 1e-5, where + ": momentum_buffer rel error " + e);
                    } else {
                        AdamWState m = opt.adamWState(p.name()).orElseThrow();
                        double e1 = Tensors.relativeError(m.expAvg().cpu(), c.tensor("exp_avg", p.name(), k).data());
                        double e2 = Tensors.relativeError(m.expAvgSq().cpu(),
                                c.tensor("exp_avg_sq", p.name(), k).data());
                        assertTrue(e1 <= 1e-5, where + ": exp_avg rel error " + e1);
                        assertTrue(e2 <= 1e-5, where + ": exp_avg_sq rel error " + e2);
                    }
                }
            }
        }
    }

    /** The provider's rule as the optimizer saw it at build: fused only with a bfloat16 iteration and the switch on. */
    private static void assertFusedAsExpected(Setting setting, List<Tensor> params) {
        for (Tensor p : params) {
            boolean served = setting.build(() -> new CudaFusedUpdateKernelsProvider()
                    .forParameter(p, setting.bf16() ? ScalarType.BFloat16 : ScalarType.Float).isPresent());
            assertEquals(setting.fused, served, setting + ": fused stages served");
        }
    }
}
