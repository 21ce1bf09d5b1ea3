package dev.muon.djl;

import dev.muon.internal.ApiSignatures;
import org.junit.jupiter.api.Test;

/** No public signature of muon-djl names a {@code dev.muon.internal} type: muon-core's check for this module. */
class ApiSignaturesTest {
    @Test
    void noPublicSignature_namesAnInternalType() throws Exception {
        ApiSignatures.assertNoneNamesAnInternalType(Muon.class, "dev.muon.djl");
    }
}
