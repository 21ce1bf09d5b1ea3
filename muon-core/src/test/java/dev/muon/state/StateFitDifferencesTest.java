package dev.muon.state;

import dev.muon.MuonConfig;
import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A difference names the parameter it concerns as a field of its own, so that a hint or a caller matches it by
 * name and never by the message's quoted text; a group's difference names none.
 */
@ExtendWith(NativeScopePerTest.class)
class StateFitDifferencesTest {

    private static OptimizerState state(MuonConfig config, long rows, String name) {
        ParameterSpec spec = ParameterSpec.muon(name, 0, new long[]{rows, 4}, ScalarType.Float, null);
        return new OptimizerState(1, List.of(config), null, List.of(ParameterEntry.of(spec)), null);
    }

    @Test
    void aParametersDifference_carriesItsName_evenAQuotedOne() {
        String name = "layer's 'odd' name";
        List<StateMismatchException.Difference> found = StateFit.differences(
                state(MuonConfig.defaults(), 6, name), state(MuonConfig.defaults(), 5, name));
        assertEquals(1, found.size());
        assertEquals(name, found.get(0).parameter());
        assertEquals(StateMismatchException.Field.SHAPE, found.get(0).field());
        assertEquals("'" + name + "' shape: this optimizer [6, 4], the state [5, 4]", found.get(0).toString());
    }

    @Test
    void aBuffersDifference_carriesItsParametersName() {
        ParameterSpec spec = ParameterSpec.muon("fc.weight", 0, new long[]{6, 4}, ScalarType.Float, null);
        OptimizerState mine = new OptimizerState(1, List.of(MuonConfig.defaults()), null,
                List.of(ParameterEntry.of(spec)), null);
        OptimizerState theirs = new OptimizerState(1, List.of(MuonConfig.defaults()), null,
                List.of(ParameterEntry.of(spec).withBuffer("momentum", torch.zeros(4, 6))), null);
        StateMismatchException.Difference d = StateFit.differences(mine, theirs).get(0);
        assertEquals("fc.weight", d.parameter());
        assertEquals("'fc.weight' momentum buffer", d.entry());
    }

    @Test
    void aGroupsDifference_namesNoParameter() {
        List<StateMismatchException.Difference> found = StateFit.differences(state(MuonConfig.defaults(), 6, "w"),
                state(MuonConfig.defaults().withNsSteps(3), 6, "w"));
        assertEquals("muon group 0", found.get(0).entry());
        assertNull(found.get(0).parameter());
    }
}
