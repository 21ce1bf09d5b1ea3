package dev.muon.djl;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every update runs in an {@link NDScope}: after the first step (which creates the state) the arrays a model's
 * manager holds do not grow; and the state, created outside the update's scope, survives a scope of the caller's.
 */
class NativeMemoryTest {

    @Test
    void steps_leaveNoArrayBehind_afterTheStateExists() {
        try (NDManager manager = NDManager.newBaseManager()) {
            TinyModel model = new TinyModel(manager, true);
            MuonAdamW opt = MuonAdamW.builder().optBlock(model.block)
                    .optMuon(MuonConfig.defaults().withNorMuon(NorMuonConfig.defaults())).build();
            model.backward(model.gradients(1, null, 0));
            model.step(opt, TinyModel.NAMES);
            int afterFirst = manager.getManagedArrays().size();
            for (int step = 2; step <= 10; step++) {
                model.backward(model.gradients(step, null, 0));
                model.step(opt, TinyModel.NAMES);
            }
            assertEquals(10, opt.stepCount());
            assertEquals(afterFirst, manager.getManagedArrays().size(), "arrays held by the model's manager");
        }
    }

    @Test
    void state_survivesAScopeOfTheCallers() {
        try (NDManager manager = NDManager.newBaseManager()) {
            TinyModel model = new TinyModel(manager, true);
            MuonAdamW opt = MuonAdamW.builder().optBlock(model.block).build();
            try (NDScope outer = new NDScope()) {
                outer.suppressNotUsedWarning();
                model.backward(model.gradients(1, null, 0));
                model.step(opt, TinyModel.NAMES);
            }
            for (String name : List.of("01hidden_bias", "02out_weight")) {
                assertFalse(opt.adamWMoments(name, ai.djl.Device.cpu()).orElseThrow().get(0).isReleased(), name);
            }
            assertFalse(opt.momentumBuffer("01hidden_weight", ai.djl.Device.cpu()).orElseThrow().isReleased());
            model.backward(model.gradients(2, null, 0));
            model.step(opt, TinyModel.NAMES);
            assertEquals(2, opt.stepCount());
        }
    }

    @Test
    void state_isFreedWithTheModelsManager() {
        MuonAdamW opt;
        TinyModel model;
        try (NDManager manager = NDManager.newBaseManager()) {
            model = new TinyModel(manager, true);
            opt = MuonAdamW.builder().optBlock(model.block).build();
            model.backward(model.gradients(1, null, 0));
            model.step(opt, TinyModel.NAMES);
        }
        assertTrue(opt.momentumBuffer("01hidden_weight", ai.djl.Device.cpu()).orElseThrow().isReleased());
    }
}
