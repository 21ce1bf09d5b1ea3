package dev.muon.cuda;

import dev.muon.internal.NativesFirst;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever public type of muon-cuda a program touches first (a {@code new CudaNewtonSchulz(..)} before the model,
 * say), libtorch's natives go into the JavaCPP cache before libtorch is loaded: muon-core's {@code EntryTypesTest}
 * for this module.
 */
class EntryTypesTest {
    @Test
    void everyPublicType_readiesTheNatives_whenInitialized() throws Exception {
        Path classes = NativesFirst.classesOf(CudaSupport.class);
        List<String> types = NativesFirst.publicTypes(classes, NativesFirst.apiPackages(classes));
        assertTrue(types.containsAll(List.of("dev.muon.cuda.CudaNewtonSchulz", "dev.muon.cuda.CudaSupport")),
                types::toString);
        assertEquals(List.of(), NativesFirst.withoutExtract(classes, types),
                "these public types do not call TorchNatives.extract() in a static initializer");
    }
}
