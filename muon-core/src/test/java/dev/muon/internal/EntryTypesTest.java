package dev.muon.internal;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever public type of ours a program touches first, libtorch's natives go into the JavaCPP cache before
 * libtorch is loaded, so that a system-wide libtorch is never mapped beside ours (issue 30, item 1: a program that
 * began with {@code MuonConfig.defaults()} and then built its model crashed on an empty cache).
 * {@link TorchNativesTest} runs such a program on an empty cache.
 */
class EntryTypesTest {

    private static Path classes() throws Exception {
        return NativesFirst.classesOf(TorchNatives.class);
    }

    @Test
    void everyPublicType_readiesTheNatives_whenInitialized() throws Exception {
        String[] packages = NativesFirst.apiPackages(classes());
        assertTrue(List.of(packages).containsAll(List.of("dev.muon", "dev.muon.orthogonalize",
                "dev.muon.distributed", "dev.muon.schedule")) && !List.of(packages).contains("dev.muon.internal"),
                List.of(packages).toString());
        List<String> types = NativesFirst.publicTypes(classes(), packages);
        // The list is what users touch: a filter that lost the configs would make this test pass on nothing.
        for (String expected : List.of("dev.muon.MuonConfig", "dev.muon.AdjustLr", "dev.muon.Assignment",
                "dev.muon.schedule.LrSchedule$WarmupCosine", "dev.muon.orthogonalize.NewtonSchulzConfig",
                "dev.muon.distributed.GroupConfig")) {
            assertTrue(types.contains(expected), expected + " is not among " + types);
        }
        assertEquals(List.of(), NativesFirst.withoutExtract(classes(), types),
                "these public types do not call TorchNatives.extract() in a static initializer");
    }

    @Test
    void aTypeWithoutTheCall_isFound() throws Exception {
        // NativesFirst itself never calls extract(): the check must name it, or it could never fail.
        Path testClasses = NativesFirst.classesOf(NativesFirst.class);
        assertEquals(List.of(NativesFirst.class.getName()),
                NativesFirst.withoutExtract(testClasses, List.of(NativesFirst.class.getName())));
    }
}
