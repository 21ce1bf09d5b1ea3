package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.ConvWeights;
import dev.muon.HyperballConfig;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.Orthogonalization;
import dev.muon.RadialBrakeConfig;
import dev.muon.RelativeUpdateConfig;
import dev.muon.StackedWeights;
import dev.muon.UpdateFloorConfig;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The configs' file form: every field comes back bit for bit, through JSON text too, and bad fields are named. */
class ConfigFieldsTest {
    static Stream<MuonConfig> muonConfigs() {
        MuonConfig d = MuonConfig.defaults();
        return Stream.of(d, d.withLr(0.1 + 0.2).withWeightDecay(1e-300).withMomentum(0.9).withNesterov(false),
                d.withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withExtraScale(1.5).withEps(1e-9).withNsSteps(3),
                d.withNsCoefficients(CoefficientSchedule.polarExpress8()),
                d.withNsPrecision(NsPrecision.BFLOAT16).withNsAlgorithm(NsAlgorithm.GRAM),
                d.withOrthogonalization(Orthogonalization.EXACT_SVD).withConvWeights(ConvWeights.FLATTEN)
                        .withStackedWeights(StackedWeights.BATCH).withBatchSameShape(false),
                d.withNorMuon(0.9, 3e-9), d.withNorMuon(NorMuonConfig.defaults()));
    }

    @ParameterizedTest
    @MethodSource("muonConfigs")
    void muonConfig_roundTripsThroughJsonText(MuonConfig c) {
        Object json = Json.parse(Json.write(ConfigFields.toJson(c, ConfigFields.MUON)), "test");
        assertEquals(c, ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults()));
    }

    @Test
    void adamWConfig_roundTripsThroughJsonText() {
        AdamWConfig c = AdamWConfig.defaults().withLr(3e-4 / 7).withBetas(0.8, 0.95).withEps(1e-12)
                .withWeightDecay(0.05);
        Object json = Json.parse(Json.write(ConfigFields.toJson(c, ConfigFields.ADAMW)), "test");
        assertEquals(c, ConfigFields.fromJson(json, ConfigFields.ADAMW, AdamWConfig.defaults()));
    }

    @Test
    void norMuonOff_isNull_andReadsAsOff() {
        Map<String, Object> json = ConfigFields.toJson(MuonConfig.defaults(), ConfigFields.MUON);
        assertTrue(json.containsKey("norMuon"));
        assertNull(json.get("norMuon"));
        assertNull(ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults().withNorMuon(0.9, 1e-8))
                .norMuon());
    }

    @Test
    void differing_listsBuildSettingsOnly_unlessAsked() {
        MuonConfig a = MuonConfig.defaults();
        MuonConfig b = a.withLr(0.5).withNsSteps(3).withNsAlgorithm(NsAlgorithm.GRAM);
        List<String[]> build = ConfigFields.differing(a, b, ConfigFields.MUON, false);
        assertEquals(List.of("nsSteps", "nsAlgorithm"), build.stream().map(d -> d[0]).toList());
        assertEquals("5", build.get(0)[1]);
        assertEquals("3", build.get(0)[2]);
        assertEquals(3, ConfigFields.differing(a, b, ConfigFields.MUON, true).size());
    }

    static Stream<Arguments> badFields() {
        return Stream.of(
                Arguments.of("nsSteps", "five", "config key 'nsSteps': nsSteps must be a 32-bit integer, got 'five'"),
                Arguments.of("lr", -1.0, "config key 'lr': lr must be >= 0, got -1.0"),
                Arguments.of("nsPrecision", "FLOAT8", "config key 'nsPrecision': nsPrecision must be one of "
                        + "FLOAT32, BFLOAT16, FLOAT64, got 'FLOAT8'"),
                Arguments.of("norMuon", Map.of("beta2", 0.9), "config key 'norMuon': must be null or an object of "
                        + "beta2 and eps"),
                Arguments.of("nsCoefficients", List.of(), "config key 'nsCoefficients': must be an object of name, "
                        + "triples, repeating and normalizationSafety"));
    }

    @ParameterizedTest
    @MethodSource("badFields")
    void badField_isRejected_namingTheKey(String key, Object value, String message) {
        Map<String, Object> json = new LinkedHashMap<>(ConfigFields.toJson(MuonConfig.defaults(), ConfigFields.MUON));
        json.put(key, value);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults()));
        assertEquals(message, e.getMessage());
    }

    @Test
    void missingOrUnknownKey_isRejected() {
        Map<String, Object> json = new LinkedHashMap<>(ConfigFields.toJson(MuonConfig.defaults(), ConfigFields.MUON));
        json.remove("eps");
        assertEquals("config key 'eps' is missing", assertThrows(IllegalArgumentException.class,
                () -> ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults())).getMessage());
        json.put("eps", 1e-7);
        json.put("colour", "blue");
        assertEquals("config key 'colour' is unknown", assertThrows(IllegalArgumentException.class,
                () -> ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults())).getMessage());
    }

    @Test
    void keys_areTheRecordsFields_newtonSchulzsOneByOne() {
        assertEquals(List.of("lr", "weightDecay", "momentum", "nesterov", "nsCoefficients", "nsSteps", "eps",
                "nsPrecision", "nsAlgorithm", "nsPreconditioning", "adjustLr", "extraScale", "convWeights",
                "stackedWeights", "orthogonalization", "batchSameShape", "norMuon", "cautiousWeightDecay", "momentumPrecision",
                "hyperball", "radialBrake", "relativeUpdate", "updateFloor", "muown"),
                ConfigFields.MUON.stream().map(ConfigFields.Field::key).toList());
        assertEquals(List.of("lr", "beta1", "beta2", "eps", "weightDecay"),
                ConfigFields.ADAMW.stream().map(ConfigFields.Field::key).toList());
    }

    static Stream<Arguments> weightHooks() {
        MuonConfig d = MuonConfig.defaults();
        return Stream.of(
                Arguments.of(d.withRadialBrake(new RadialBrakeConfig(0.25, 0.75, 1e-9)), "radialBrake",
                        Map.of("outwardScale", 0.25, "inwardScale", 0.75, "eps", 1e-9)),
                Arguments.of(d.withRelativeUpdate(new RelativeUpdateConfig(1e-13)), "relativeUpdate",
                        Map.of("eps", 1e-13)),
                Arguments.of(d.withUpdateFloor(new UpdateFloorConfig(0.3, true, 1e-10)), "updateFloor",
                        Map.of("floor", 0.3, "perRow", true, "eps", 1e-10)));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("weightHooks")
    void aWeightHook_isStoredAsItsFields_andReadBack_andAFileWithoutItReadsAsOff(MuonConfig config, String key,
                                                                              Map<String, Object> fields) {
        Map<String, Object> json = new LinkedHashMap<>(ConfigFields.toJson(config, ConfigFields.MUON));
        assertEquals(fields, json.get(key));
        assertEquals(config, ConfigFields.fromJson(Json.parse(Json.write(json), "test"), ConfigFields.MUON,
                MuonConfig.defaults()));
        json.remove(key);
        assertEquals(MuonConfig.defaults(), ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults()));
    }

    @Test
    void aKeyAddedAfterTheFirstFormat_mayBeMissing_andReadsAsItsDefault() {
        MuonConfig hyperball = MuonConfig.defaults().withWeightDecay(0).withHyperball(HyperballConfig.radius(2));
        Map<String, Object> json = new LinkedHashMap<>(ConfigFields.toJson(hyperball, ConfigFields.MUON));
        assertEquals(Map.of("radius", 2.0, "eps", 1e-8), json.get("hyperball"));
        assertEquals(hyperball, ConfigFields.fromJson(Json.parse(Json.write(json), "test"), ConfigFields.MUON,
                MuonConfig.defaults()));
        json.remove("hyperball");
        assertNull(ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults()).hyperball(),
                "a file written before hyperball existed reads as hyperball off");
        json.remove("momentumPrecision");
        assertEquals("config key 'momentumPrecision' is missing", assertThrows(IllegalArgumentException.class,
                () -> ConfigFields.fromJson(json, ConfigFields.MUON, MuonConfig.defaults())).getMessage());
    }
}
