package dev.muon.spark;

import dev.muon.internal.ApiSignatures;
import dev.muon.internal.NativesFirst;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * No public signature of muon-spark names a {@code dev.muon.internal} type, and every public class readies libtorch's
 * natives before anything of it can load libtorch: muon-core's checks for this module.
 */
class ApiSignaturesTest {
    private static Path classes() throws Exception {
        return NativesFirst.classesOf(SparkTraining.class);
    }

    @Test
    void noPublicSignature_namesAnInternalType() throws Exception {
        String[] packages = NativesFirst.apiPackages(classes());
        assertEquals(List.of("dev.muon.spark"), List.of(packages));
        assertEquals(List.of(), ApiSignatures.namingInternalTypes(classes(), packages));
    }

    @Test
    void everyPublicClass_extractsTheNativesFirst() throws Exception {
        List<String> types = NativesFirst.publicTypes(classes(), "dev.muon.spark");
        assertEquals(List.of("dev.muon.spark.RankContext", "dev.muon.spark.SparkTraining",
                "dev.muon.spark.SparkTrainingConfig"), types.stream().sorted().toList());
        assertEquals(List.of(), NativesFirst.withoutExtract(classes(), types));
    }
}
