package dev.muon.djl;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The walk over a block gives DJL's own names, in DJL's order, and the dotted names the rules read. */
class ModelParametersTest {

    @Test
    void names_areThoseOfGetParameters_andRuleNamesDropTheCounters() {
        try (NDManager manager = NDManager.newBaseManager()) {
            SequentialBlock inner = new SequentialBlock().add(Linear.builder().setUnits(4).build())
                    .add(Linear.builder().setUnits(2).optBias(false).build());
            SequentialBlock block = new SequentialBlock().add(Linear.builder().setUnits(4).build()).add(inner);
            block.initialize(manager, DataType.FLOAT32, new Shape(1, 3));
            ModelParameters model = ModelParameters.of(block);
            List<String> names = model.entries().stream().map(ModelParameters.Entry::name).toList();
            assertEquals(block.getParameters().keys(), names);
            assertEquals(List.of("Linear.weight", "Linear.bias", "SequentialBlock.Linear.weight",
                    "SequentialBlock.Linear.bias", "SequentialBlock.Linear.weight"),
                    model.entries().stream().map(ModelParameters.Entry::ruleName).toList());
            assertEquals("02SequentialBlock_02Linear_weight", model.nameOf(model.entries().get(4).id()));
            assertEquals("uid-unknown", model.nameOf("uid-unknown"));
        }
    }

    @ParameterizedTest
    @CsvSource({"03Linear, Linear", "12head, head", "010, 010", "lm_head, lm_head", "100Linear, Linear"})
    void moduleName_dropsDjlsCounter(String key, String expected) {
        assertEquals(expected, ModelParameters.moduleName(key));
    }
}
