package dev.muon.internal;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The library's switches: true or false in any case, unset as false, and anything else refused by name. */
class SystemSwitchTest {
    @ParameterizedTest
    @CsvSource(nullValues = "unset", value = {"unset, false", "false, false", "FALSE, false", "true, true",
        "True, true"})
    void readsTrueAndFalse_andUnsetAsOff(String value, boolean on) {
        assertEquals(on, SystemSwitch.parse("dev.muon.native.disable", value));
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "yes", "on", "", " true"})
    void refusesAnyOtherValue_namingTheProperty(String value) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SystemSwitch.parse("dev.muon.native.disable", value));
        assertEquals("-Ddev.muon.native.disable must be true or false, got '" + value + "'", e.getMessage());
    }

    /** A switch read inside the iteration is refused when an iteration is built, never in a step. */
    @Test
    void newtonSchulz_refusesABadAdaptiveThreadsSwitch_atConstruction() {
        String property = "dev.muon.blas.adaptiveThreads";
        String before = System.getProperty(property);
        System.setProperty(property, "yes");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new NewtonSchulz(NewtonSchulzConfig.defaults()));
            assertEquals("-D" + property + " must be true or false, got 'yes'", e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(property);
            } else {
                System.setProperty(property, before);
            }
        }
        new NewtonSchulz(NewtonSchulzConfig.defaults());
    }
}
