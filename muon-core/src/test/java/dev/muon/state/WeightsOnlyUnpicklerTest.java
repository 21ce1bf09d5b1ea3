package dev.muon.state;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The weights-only pickle reader: it builds the data a state dict holds, refuses every global, opcode and call
 * outside its allow-list by name, and keeps the result a bounded tree.
 */
class WeightsOnlyUnpicklerTest {
    @Test
    void stateDictValues_areRead() {
        byte[] pickle = PickleBytes.protocol2().op('}', '(').string("lr").number(1e-3).string("ids").op(']', '(', 'K', 0, 'K', 1, 'e').string("t")
                .tensor("FloatStorage", "0", 12, 0, new long[]{3, 4}, new long[]{4, 1})
                .string("none").op('N').string("flags").op(0x88, 0x89, 0x86).op('u').stop();
        Map<?, ?> root = assertInstanceOf(Map.class, WeightsOnlyUnpickler.read(pickle));
        assertEquals(1e-3, root.get("lr"));
        assertEquals(List.of(0L, 1L), root.get("ids"));
        PickleValues.TensorRef t = assertInstanceOf(PickleValues.TensorRef.class, root.get("t"));
        assertEquals(new PickleValues.StorageRef(TensorKind.FLOAT32, "0", 12), t.storage());
        assertArrayEquals(new long[]{3, 4}, t.size());
        assertArrayEquals(new long[]{4, 1}, t.stride());
        assertEquals(null, root.get("none"));
        assertTrue(root.containsKey("none"));
        assertEquals(PickleValues.Tuple.of(true, false), root.get("flags"));
    }

    @Test
    void orderedDict_andMemo_areRead() {
        byte[] pickle = PickleBytes.protocol2().global("collections", "OrderedDict").op(')', 'R', 'q', 0, '(')
                .string("a").op('K', 7).op('u', '0', 'h', 0).stop();
        assertEquals(Map.of("a", 7L), WeightsOnlyUnpickler.read(pickle));
    }

    static Stream<Arguments> refused() {
        return Stream.of(
                Arguments.of("osSystem", PickleBytes.protocol2().global("os", "system").string("touch /tmp/x")
                        .op(0x85, 'R').stop(), "asks for the global os.system, which is not allowed"),
                Arguments.of("torchScriptClass", PickleBytes.protocol2().global("__torch__.Evil", "Evil")
                        .op(')', 0x81).stop(), "asks for the global __torch__.Evil.Evil, which is not allowed"),
                Arguments.of("torchFromFile", PickleBytes.protocol2().global("torch", "from_file").stop(),
                        "asks for the global torch.from_file, which is not allowed"),
                Arguments.of("rebuildParameter", PickleBytes.protocol2().global("torch._utils", "_rebuild_parameter")
                        .stop(), "asks for the global torch._utils._rebuild_parameter, which is not allowed"),
                Arguments.of("build", PickleBytes.protocol2().op('}', '}', 'b').stop(),
                        "has opcode 0x62 (BUILD), which a weights-only reader does not run"),
                Arguments.of("inst", PickleBytes.protocol2().op('(', 'i').stop(),
                        "has opcode 0x69 (INST), which a weights-only reader does not run"),
                Arguments.of("ext1", PickleBytes.protocol2().op(0x82, 1).stop(),
                        "has opcode 0x82 (EXT1), which a weights-only reader does not run"),
                Arguments.of("textPersid", PickleBytes.protocol2().op('P').stop(),
                        "has opcode 0x50 (PERSID), which a weights-only reader does not run"),
                Arguments.of("protocol5", new PickleBytes().op(0x80, 5).op('N').stop(),
                        "has protocol 5; torch.save writes 2 to 4"),
                Arguments.of("noStop", PickleBytes.protocol2().op('N').bytes(), "ends before its STOP opcode"),
                Arguments.of("twoValues", PickleBytes.protocol2().op('N', 'N').stop(),
                        "stops with 2 values and 0 marks on its stack; a pickle ends with exactly one value"),
                Arguments.of("bareGlobal", PickleBytes.protocol2().global("collections", "OrderedDict").stop(),
                        "holds a bare global as its value"),
                Arguments.of("globalInList", PickleBytes.protocol2().op(']').global("collections", "OrderedDict")
                        .op('a').stop(), "holds a global inside a value (only a persistent id may name a storage "
                        + "type)"),
                Arguments.of("callNonGlobal", PickleBytes.protocol2().op('N', ')', 'R').stop(),
                        "calls a None; only allowed globals can be called"),
                Arguments.of("orderedDictWithArgs", PickleBytes.protocol2().global("collections", "OrderedDict")
                        .op('N', 0x85, 'R').stop(), "calls collections.OrderedDict with arguments; torch.save "
                        + "passes none"),
                Arguments.of("duplicateKey", PickleBytes.protocol2().op('}', '(', 'K', 0, 'N', 'K', 0, 'N', 'u')
                        .stop(), "repeats the dict key 0"),
                Arguments.of("tupleKey", PickleBytes.protocol2().op('}', ')', 'N', 's').stop(),
                        "has a dict key that is a tuple; keys must be strings, ints, floats, booleans or None"),
                Arguments.of("selfAppend", PickleBytes.protocol2().op(']', 'q', 0, 'h', 0, 'a').stop(),
                        "puts a container inside itself"),
                Arguments.of("changeAfterUse", PickleBytes.protocol2().op(']', 'q', 0, ']', 'h', 0, 'a', 'h', 0,
                        'K', 1, 'a').stop(), "has APPEND on a container that is already inside another value"),
                Arguments.of("appendToDict", PickleBytes.protocol2().op('}', 'N', 'a').stop(), "has APPEND on a dict"),
                Arguments.of("appendToNumber", PickleBytes.protocol2().op('K', 1, 'N', 'a').stop(),
                        "has APPEND on a 1, not a list"),
                Arguments.of("missingMemo", PickleBytes.protocol2().op('h', 9).stop(),
                        "reads memo entry 9, which was never written"),
                Arguments.of("popPastMark", PickleBytes.protocol2().op('N', '(', 0x85).stop(),
                        "pops 1 values from a stack that holds fewer above its last mark"),
                Arguments.of("noMark", PickleBytes.protocol2().op('t').stop(), "pops to a mark that was never set"),
                Arguments.of("hugeLong", PickleBytes.protocol2().op(0x8a, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9).stop(),
                        "has a LONG1 of 9 bytes; ints beyond 64 bits are not read"),
                Arguments.of("badUtf8", PickleBytes.protocol2().op('X', 1, 0, 0, 0, 0xff).stop(),
                        "has a string that is not valid UTF-8"),
                Arguments.of("stringPastEnd", PickleBytes.protocol2().op('X', 0xff, 0xff, 0xff, 0x7f).bytes(),
                        "ends inside a string's bytes"),
                Arguments.of("rebuildFiveArgs", PickleBytes.protocol2().global("torch._utils", "_rebuild_tensor_v2")
                        .op('(', 'N', 'N', 'N', 'N', 'N', 't', 'R').stop(),
                        "calls _rebuild_tensor_v2 with 5 arguments; it takes 6 or 7"),
                Arguments.of("rebuildOnNone", PickleBytes.protocol2().global("torch._utils", "_rebuild_tensor_v2")
                        .op('(', 'N', 'K', 0, ')', ')', 0x89, '}', 't', 'R').stop(),
                        "calls _rebuild_tensor_v2 on a None, not a storage"),
                Arguments.of("persistentIdNotStorage", PickleBytes.protocol2().string("x").op(0x85, 'Q').stop(),
                        "has a persistent id that is not ('storage', type, key, location, numel)"),
                Arguments.of("storageTypeNotAClass", PickleBytes.protocol2().op('(').string("storage").op('N')
                        .string("0").string("cpu").op('K', 1, 't', 'Q').stop(),
                        "has a persistent id whose storage type is a None"),
                Arguments.of("negativeNumel", PickleBytes.protocol2().op('(').string("storage")
                        .global("torch", "FloatStorage").string("0").string("cpu").integer(-1).op('t', 'Q').stop(),
                        "has a persistent id whose element count is not an int >= 0, got -1"),
                Arguments.of("intStorage", PickleBytes.protocol2().global("torch", "IntStorage").stop(),
                        "asks for the global torch.IntStorage, which is not allowed"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void refused_isAFormatException_namingTheRule(String name, byte[] pickle, String rule) {
        FormatException e = assertThrows(FormatException.class, () -> WeightsOnlyUnpickler.read(pickle));
        assertTrue(e.entry().startsWith("data.pkl at byte "), e.entry());
        assertTrue(e.rule().startsWith(rule), e.rule());
    }

    /** Lists nested 100,000 deep: refused at the bound, without a stack overflow. */
    @Test
    void deepNesting_isRefused_atTheBound() {
        PickleBytes p = nestedLists(100_000);
        FormatException e = assertThrows(FormatException.class, () -> WeightsOnlyUnpickler.read(p.stop()));
        assertEquals("nests lists, dicts and tuples deeper than 32", e.rule());

        PickleBytes tuples = PickleBytes.protocol2().op('N');
        for (int i = 0; i < 100_000; i++) {
            tuples.op(0x85);
        }
        assertEquals("nests lists, dicts and tuples deeper than 32", assertThrows(FormatException.class,
                () -> WeightsOnlyUnpickler.read(tuples.stop())).rule());
    }

    @Test
    void nestingAtTheBound_isRead() {
        PickleBytes p = nestedLists(32);
        Object v = WeightsOnlyUnpickler.read(p.stop());
        for (int d = 0; d < 31; d++) {
            v = ((List<?>) v).get(0);
        }
        assertEquals(List.of(), v);
    }

    /**
     * Lists nested {@code depth} deep: {@code depth} EMPTY_LISTs, then {@code depth − 1} APPENDs, each list into the
     * one below it.
     */
    private static PickleBytes nestedLists(int depth) {
        PickleBytes p = PickleBytes.protocol2();
        for (int i = 0; i < depth; i++) {
            p.op(']');
        }
        for (int i = 0; i < depth - 1; i++) {
            p.op('a');
        }
        return p;
    }
}
