package dev.muon.djl;

import ai.djl.Device;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link StepClock} under DJL's call orders: any order within a step, one call per parameter and device. */
class StepClockTest {
    private static final List<String> IDS = List.of("a", "b", "c", "d", "e");
    private static final List<Device> DEVICES = List.of(Device.cpu(), Device.gpu(0), Device.gpu(1));

    /** Runs {@code steps} steps of calls in a new random order each; returns the steps the clock opened. */
    private static List<Integer> run(StepClock clock, int steps, List<Device> devices, long seed) {
        Random random = new Random(seed);
        List<Integer> opened = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            List<String> order = new ArrayList<>(IDS);
            Collections.shuffle(order, random);
            int call = 0;
            for (String id : order) {
                for (Device device : devices) {
                    ParameterKey key = new ParameterKey(id, device);
                    if (clock.opensStep(key)) {
                        clock.open(false);
                        opened.add(call);
                    }
                    clock.record(key);
                    clock.countUpdate(key);
                    call++;
                }
            }
        }
        return opened;
    }

    @Test
    void everyStep_opensAtItsFirstCall_inAnyOrder_onOneOrSeveralDevices() {
        for (List<Device> devices : List.of(DEVICES.subList(0, 1), DEVICES)) {
            StepClock clock = new StepClock();
            List<Integer> opened = run(clock, 7, devices, 11);
            assertEquals(Collections.nCopies(7, 0), opened, "one step opens at the first call of each round");
            assertEquals(7, clock.applied());
            assertEquals(IDS.size() * devices.size(), clock.callsThisStep());
            for (Device device : devices) {
                // Each copy's own count: 7 updates, then this one is the 8th.
                assertEquals(8, clock.countUpdate(new ParameterKey("c", device)));
            }
        }
    }

    @Test
    void aSkippedStep_countsNoUpdate_andTheNextStepOpensAtARepeat() {
        StepClock clock = new StepClock();
        ParameterKey a = new ParameterKey("a", Device.cpu());
        ParameterKey b = new ParameterKey("b", Device.cpu());
        assertTrue(clock.opensStep(a));
        clock.open(true);
        clock.record(a);
        assertFalse(clock.opensStep(b));
        clock.record(b);
        assertTrue(clock.skipping());
        assertEquals(0, clock.applied());
        assertEquals(1, clock.opened());
        assertTrue(clock.opensStep(b), "b again: the next step");
        clock.open(false);
        assertFalse(clock.skipping());
        assertEquals(1, clock.applied());
        assertEquals(1, clock.countUpdate(b), "the skipped step counted no update");
    }
}
