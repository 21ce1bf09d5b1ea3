package dev.muon.architecture;

import dev.muon.architecture.leaky.LeakyApi;
import dev.muon.internal.ApiSignatures;
import dev.muon.internal.NativesFirst;
import dev.muon.internal.TorchNatives;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No public signature of muon-core's API packages names a {@code dev.muon.internal} type: the internal package has
 * no compatibility promise, so a user must never need one of its types to call, extend or implement the API (issue
 * 29, item 5: {@code NewtonSchulz.orthogonalizeWith} took an internal type).
 */
class ApiSignaturesTest {

    @Test
    void noPublicSignatureOfAnApiPackage_namesAnInternalType() throws Exception {
        Path classes = NativesFirst.classesOf(TorchNatives.class);
        String[] packages = NativesFirst.apiPackages(classes);
        assertTrue(List.of(packages).containsAll(List.of("dev.muon", "dev.muon.orthogonalize", "dev.muon.schedule",
                "dev.muon.distributed", "dev.muon.state")), List.of(packages).toString());
        assertEquals(List.of(), ApiSignatures.namingInternalTypes(classes, packages));
    }

    @Test
    void theCheck_findsEveryKindOfSignature() throws Exception {
        Path testClasses = NativesFirst.classesOf(LeakyApi.class);
        String leaky = LeakyApi.class.getName();
        String ns = "dev.muon.internal.NewtonSchulzKernels";
        String update = "dev.muon.internal.FusedUpdateKernels";
        assertEquals(List.of(
                leaky + " interface: " + update,
                leaky + " type parameter T: " + ns,
                leaky + "$Nested.take(..) parameter 1: " + ns,
                leaky + ".<init>(..) parameter 1: " + update,
                leaky + ".bounded(..) parameter 1: " + update,
                leaky + ".bounded(..) type parameter S: " + update,
                leaky + ".field field: " + ns,
                leaky + ".get(..) return: " + update,
                leaky + ".nested(..) return: " + ns),
                ApiSignatures.namingInternalTypes(testClasses, LeakyApi.class.getPackageName()));
    }
}
