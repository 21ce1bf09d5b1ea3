package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link ClassificationCases} through muon-core's {@code MuonAdamW.builder(namedParameters)}: the rows and refusals
 * that muon-djl's {@code ClassificationTableDjlTest} expects of its own {@code MuonAdamW} on the same models.
 */
@ExtendWith(NativeScopePerTest.class)
class ClassificationTableTest {

    static List<ClassificationCases.Case> cases() {
        return ClassificationCases.all();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void everyCase_givesTheSharedAssignmentOrRefusal(ClassificationCases.Case c) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        for (ClassificationCases.Param p : c.params()) {
            named.put(p.name(), p.tiedTo() != null ? named.get(p.tiedTo())
                    : torch.randn(p.shape()).requires_grad_(p.trainable()));
        }
        MuonAdamW.Builder builder = MuonAdamW.builder(named).forceMuon(c.forceMuon().toArray(String[]::new))
                .forceAdamW(c.forceAdamW().toArray(String[]::new)).outputLayerOnAdamW(c.outputLayer())
                .allowEmptyMuon(c.allowEmptyMuon());
        if (c.muonWhen() != null) {
            builder.muonWhen((name, t) -> c.muonWhen().test(name, t.shape()));
        }
        if (c.muonConfig() != null) {
            builder.muon(c.muonConfig());
        }
        Function<String, String> text = t -> ClassificationCases.resolve(t, name -> name, Binding.MUON_CORE);
        if (c.refusal() != null) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
            assertEquals(text.apply(c.refusal()), e.getMessage().split("\n")[0]);
            return;
        }
        Assignment a = builder.build().assignment();
        assertEquals(c.rows().stream().map(text).toList(), a.rows().stream()
                .map(r -> r.name() + " " + r.optimizer() + " " + r.reason()).toList(), a.toString());
        assertEquals(c.frozen().stream().map(text).toList(), a.frozen());
    }
}
