package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.MuonConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The state accessors answer for their own parameters and refuse a name that is not one, naming it, where an empty
 * answer would read as "not updated yet": a misspelt name, or the other side of a MuonAdamW.
 */
class StateAccessorsTest {
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    @Test
    void muonAdamW_answersForItsOwn_andRefusesAnotherName_orTheOtherSide() {
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray hidden = scope.randomNormal(new Shape(6, 10));
            NDArray bias = scope.randomNormal(new Shape(6));
            ParamBlock block = new ParamBlock().param("hidden", hidden).param("bias", bias);
            MuonAdamW hybrid = MuonAdamW.builder().optBlock(block).optMuon(MuonConfig.defaults())
                    .optForceMuon("hidden").build();
            Device cpu = hidden.getDevice();
            assertTrue(hybrid.momentumBuffer("hidden", cpu).isEmpty(), "not updated yet");
            hybrid.update(block.getParameters().get(0).getValue().getId(), hidden,
                    scope.randomNormal(new Shape(6, 10)));
            hybrid.update(block.getParameters().get(1).getValue().getId(), bias, scope.randomNormal(new Shape(6)));
            assertTrue(hybrid.momentumBuffer("hidden", cpu).isPresent());
            assertEquals(2, hybrid.adamWMoments("bias", cpu).orElseThrow().size());

            assertEquals("name must be a parameter of the block MuonAdamW is bound to; 'hiden' is not (hidden, bias)",
                    assertThrows(IllegalArgumentException.class, () -> hybrid.momentumBuffer("hiden", cpu))
                            .getMessage());
            assertEquals("name must be a parameter on Muon; 'bias' is on AdamW (see assignment())",
                    assertThrows(IllegalArgumentException.class, () -> hybrid.momentumBuffer("bias", cpu))
                            .getMessage());
            assertEquals("name must be a parameter on AdamW; 'hidden' is on Muon (see assignment())",
                    assertThrows(IllegalArgumentException.class, () -> hybrid.adamWMoments("hidden", cpu))
                            .getMessage());
        }
    }

    @Test
    void muon_refusesANameItsBlockDoesNotHave() {
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray w = scope.randomNormal(new Shape(6, 10));
            ParamBlock block = new ParamBlock().param("w", w);
            Muon muon = Muon.builder().optBlock(block).optConfig(MuonConfig.defaults()).build();
            muon.update(block.getParameters().get(0).getValue().getId(), w, scope.randomNormal(new Shape(6, 10)));
            assertTrue(muon.momentumBuffer("w", w.getDevice()).isPresent());
            assertEquals("name must be a parameter of the block Muon is bound to; 'v' is not (w)",
                    assertThrows(IllegalArgumentException.class, () -> muon.momentumBuffer("v", w.getDevice()))
                            .getMessage());
        }
    }
}
