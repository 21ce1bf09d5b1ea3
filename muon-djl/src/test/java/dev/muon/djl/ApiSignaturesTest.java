package dev.muon.djl;

import dev.muon.internal.ApiSignatures;
import dev.muon.internal.NativesFirst;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** No public signature of muon-djl names a {@code dev.muon.internal} type: muon-core's check for this module. */
class ApiSignaturesTest {
    @Test
    void noPublicSignature_namesAnInternalType() throws Exception {
        Path classes = Path.of(Muon.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String[] packages = NativesFirst.apiPackages(classes);
        assertTrue(List.of(packages).contains("dev.muon.djl"), List.of(packages).toString());
        assertEquals(List.of(), ApiSignatures.namingInternalTypes(classes, packages));
    }
}
