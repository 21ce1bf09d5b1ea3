package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.ClassificationCases;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * muon-core's {@link ClassificationCases} through muon-djl's {@link MuonAdamW}, on DJL blocks with the cases' module
 * trees: the same rows and refusals muon-core's {@code ClassificationTableTest} expects of muon-core's
 * {@code MuonAdamW}, in DJL's names and setting names.
 */
class ClassificationTableDjlTest {
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    static List<ClassificationCases.Case> cases() {
        return ClassificationCases.all();
    }

    /** A block with the case's module tree: a child per module, a shared child for tied modules. */
    static ParamBlock block(ClassificationCases.Case c, NDManager manager) {
        ParamBlock root = new ParamBlock();
        Map<String, ParamBlock> modules = new LinkedHashMap<>();
        modules.put("", root);
        for (Map.Entry<String, List<ClassificationCases.Param>> m : ClassificationCases.byModule(c).entrySet()) {
            String path = m.getKey();
            List<ClassificationCases.Param> params = m.getValue();
            ParamBlock module;
            String tiedTo = params.get(0).tiedTo();
            if (tiedTo != null) {
                module = modules.get(tiedTo.substring(0, tiedTo.lastIndexOf('.')));
            } else {
                module = path.isEmpty() ? root : new ParamBlock();
                for (ClassificationCases.Param p : params) {
                    String leaf = p.name().substring(p.name().lastIndexOf('.') + 1);
                    NDArray values = manager.randomNormal(new Shape(p.shape()));
                    if (p.trainable()) {
                        module.param(leaf, values);
                    } else {
                        module.frozen(leaf, values);
                    }
                }
            }
            if (!path.isEmpty()) {
                int dot = path.lastIndexOf('.');
                ParamBlock parent = dot < 0 ? root : modules.get(path.substring(0, dot));
                parent.child(path.substring(dot + 1), module);
            }
            modules.put(path, module);
        }
        return root;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void everyCase_givesTheSharedAssignmentOrRefusal(ClassificationCases.Case c) {
        ParamBlock block = block(c, manager.get());
        Map<String, String> djlName = new HashMap<>();
        Map<String, String> dotted = new HashMap<>();
        ModelParameters.of(block).entries().forEach(e -> {
            djlName.put(e.ruleName(), e.name());
            dotted.put(e.name(), e.ruleName());
        });
        assertEquals(c.params().stream().map(ClassificationCases.Param::name).toList(),
                ModelParameters.of(block).entries().stream().map(ModelParameters.Entry::ruleName).toList(),
                "the block registers the case's parameters in the case's order");
        Function<String, String> name = n -> djlName.getOrDefault(n, n);
        Function<String, String> text = t -> ClassificationCases.resolve(t, name, DjlSupport.BINDING);
        MuonAdamW.Builder builder = MuonAdamW.builder().optBlock(block)
                .optForceMuon(c.forceMuon().stream().map(name).toArray(String[]::new))
                .optForceAdamW(c.forceAdamW().stream().map(name).toArray(String[]::new))
                .optOutputLayerOnAdamW(c.outputLayer()).optAllowEmptyMuon(c.allowEmptyMuon());
        if (c.muonWhen() != null) {
            builder.optMuonWhen((n, shape) -> c.muonWhen().test(dotted.get(n), shape.getShape()));
        }
        if (c.muonConfig() != null) {
            builder.optMuon(c.muonConfig());
        }
        if (c.refusal() != null) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> builder.build().assignment());
            assertEquals(text.apply(c.refusal()), e.getMessage().split("\n")[0]);
            return;
        }
        ParameterAssignment a = builder.build().assignment();
        assertEquals(c.rows().stream().map(text).toList(), a.rows().stream()
                .map(r -> r.name() + " " + r.optimizer() + " " + r.reason()).toList(), a.toString());
        assertEquals(c.frozen().stream().map(text).toList(), a.frozen());
    }
}
