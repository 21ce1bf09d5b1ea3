package dev.muon.cuda;

import dev.muon.internal.ApiSignatures;
import org.junit.jupiter.api.Test;

/**
 * No public signature of muon-cuda's API package names a {@code dev.muon.internal} type: muon-core's
 * {@code ApiSignaturesTest} for this module. The module implements internal seams; its public types do not show them.
 */
class ApiSignaturesTest {
    @Test
    void noPublicSignature_namesAnInternalType() throws Exception {
        ApiSignatures.assertNoneNamesAnInternalType(CudaSupport.class, "dev.muon.cuda");
    }
}
