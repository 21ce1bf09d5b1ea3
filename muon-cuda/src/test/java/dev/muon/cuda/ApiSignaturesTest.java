package dev.muon.cuda;

import dev.muon.internal.ApiSignatures;
import dev.muon.internal.NativesFirst;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No public signature of muon-cuda's API package names a {@code dev.muon.internal} type: muon-core's
 * {@code ApiSignaturesTest} for this module. The module implements internal seams; its public types do not show them.
 */
class ApiSignaturesTest {
    @Test
    void noPublicSignature_namesAnInternalType() throws Exception {
        Path classes = Path.of(CudaSupport.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String[] packages = NativesFirst.apiPackages(classes);
        assertTrue(List.of(packages).contains("dev.muon.cuda"), List.of(packages).toString());
        assertEquals(List.of(), ApiSignatures.namingInternalTypes(classes, packages));
    }
}
