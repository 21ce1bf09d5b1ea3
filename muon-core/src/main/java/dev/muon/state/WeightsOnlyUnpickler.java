package dev.muon.state;

import dev.muon.internal.Messages;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A pickle reader that builds data and never runs anything, in the manner of PyTorch's
 * {@code torch.load(weights_only=True)}: the pickle virtual machine of protocols 2 to 4, with the opcodes a
 * {@code torch.save} of a state dict uses, and an allow-list of globals instead of Python's import-anything:
 * <ul>
 *   <li>{@code torch._utils._rebuild_tensor_v2}, which becomes a {@link PickleValues.TensorRef} (its bounds are
 *       checked later, against the storage's record);</li>
 *   <li>{@code collections.OrderedDict}, which becomes a dict;</li>
 *   <li>the storage classes {@code torch.DoubleStorage}, {@code FloatStorage}, {@code HalfStorage},
 *       {@code BFloat16Storage}, {@code LongStorage}, only inside a persistent id
 *       {@code ('storage', type, key, location, numel)}.</li>
 * </ul>
 * Every other global, every other opcode ({@code BUILD}, {@code INST}, {@code OBJ}, {@code NEWOBJ}, ...) and every
 * other call is refused by name. TorchScript's class code, which libtorch's reader would run, is never looked at.
 *
 * <p>The result is a tree, never a cycle: a list or dict can be filled only until it is placed inside another
 * value, and the nesting is bounded by {@link #MAX_DEPTH}; dict keys are strings, ints, floats, booleans or None.
 * The input is bounded by its caller ({@link TorchLoad}), and so are the memo and the stack.
 *
 * <p>Not API (see this package).
 */
final class WeightsOnlyUnpickler {
    /** The deepest nesting of containers; a state dict needs 5. */
    public static final int MAX_DEPTH = 32;
    /** The most memo entries. */
    public static final int MAX_MEMO = 1 << 22;

    private static final Set<String> STORAGES = Set.of("DoubleStorage", "FloatStorage", "HalfStorage",
            "BFloat16Storage", "LongStorage");

    private final ByteBuffer in;
    private final List<Object> stack = new ArrayList<>();
    private final List<Integer> marks = new ArrayList<>();
    private final Map<Long, Object> memo = new HashMap<>();
    /** Each list and dict made so far: its nesting depth, and whether it sits inside another value. */
    private final Map<Object, Container> containers = new IdentityHashMap<>();

    /** A global the allow-list admits; only these reach the stack. */
    private enum Global {
        REBUILD_TENSOR, ORDERED_DICT
    }

    /** A storage class of the allow-list. */
    private record StorageClass(TensorKind kind) {
    }

    private static final class Container {
        int depth = 1;
        boolean sealed;
    }

    private WeightsOnlyUnpickler(byte[] bytes) {
        this.in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Reads one pickle.
     *
     * @param bytes the pickle
     * @return its value: maps, lists, {@link PickleValues.Tuple}, strings, longs, doubles, booleans, null and
     *         {@link PickleValues.TensorRef}
     * @throws FormatException if the pickle is malformed, exceeds a bound, or asks for anything outside the
     *                         allow-list
     */
    public static Object read(byte[] bytes) {
        return new WeightsOnlyUnpickler(bytes).run();
    }

    private Object run() {
        while (true) {
            if (!in.hasRemaining()) {
                throw fail("ends before its STOP opcode");
            }
            int at = in.position();
            int op = in.get() & 0xff;
            switch (op) {
                case 0x80 -> { // PROTO
                    int protocol = u8();
                    if (protocol < 2 || protocol > 4) {
                        throw fail("has protocol " + protocol + "; torch.save writes 2 to 4");
                    }
                }
                case 0x95 -> skip(8, "FRAME"); // FRAME: a length hint only
                case '.' -> { // STOP
                    if (stack.size() != 1 || !marks.isEmpty()) {
                        throw fail("stops with " + stack.size() + " values and " + marks.size() + " marks on its "
                                + "stack; a pickle ends with exactly one value");
                    }
                    Object root = stack.get(0);
                    if (root instanceof Global || root instanceof StorageClass || persistentIds.containsKey(root)) {
                        throw fail("holds a bare global as its value");
                    }
                    return root;
                }
                case '(' -> marks.add(stack.size()); // MARK
                case '}' -> push(newContainer(new LinkedHashMap<>())); // EMPTY_DICT
                case ']' -> push(newContainer(new ArrayList<>())); // EMPTY_LIST
                case ')' -> push(new PickleValues.Tuple(List.of())); // EMPTY_TUPLE
                case 'N' -> push(null); // NONE
                case 0x88 -> push(Boolean.TRUE); // NEWTRUE
                case 0x89 -> push(Boolean.FALSE); // NEWFALSE
                case 'K' -> push((long) u8()); // BININT1
                case 'M' -> push((long) u16()); // BININT2
                case 'J' -> push((long) int32()); // BININT
                case 0x8a -> push(long1()); // LONG1
                case 'G' -> push(float64()); // BINFLOAT
                case 'X' -> push(utf8(uint32("BINUNICODE"))); // BINUNICODE
                case 0x8c -> push(utf8(u8())); // SHORT_BINUNICODE
                case 't' -> push(tuple(popMark())); // TUPLE
                case 0x85 -> push(tuple(pop(1))); // TUPLE1
                case 0x86 -> push(tuple(pop(2))); // TUPLE2
                case 0x87 -> push(tuple(pop(3))); // TUPLE3
                case 'a' -> append(pop(1)); // APPEND
                case 'e' -> append(popMark()); // APPENDS
                case 's' -> setItems(pop(2)); // SETITEM
                case 'u' -> setItems(popMark()); // SETITEMS
                case 'q' -> put(u8()); // BINPUT
                case 'r' -> put(uint32("LONG_BINPUT")); // LONG_BINPUT
                case 0x94 -> put(memo.size()); // MEMOIZE
                case 'h' -> push(get(u8())); // BINGET
                case 'j' -> push(get(uint32("LONG_BINGET"))); // LONG_BINGET
                case '0' -> pop(1); // POP
                case '1' -> popMark(); // POP_MARK
                case 'c' -> push(global(line("GLOBAL"), line("GLOBAL"))); // GLOBAL
                case 0x93 -> { // STACK_GLOBAL
                    List<Object> names = pop(2);
                    if (!(names.get(0) instanceof String module) || !(names.get(1) instanceof String name)) {
                        throw fail("has a STACK_GLOBAL whose module and name are not strings");
                    }
                    push(global(module, name));
                }
                case 'Q' -> push(persistentId(pop(1).get(0))); // BINPERSID
                case 'R' -> { // REDUCE
                    List<Object> callAndArgs = pop(2);
                    push(reduce(callAndArgs.get(0), callAndArgs.get(1)));
                }
                default -> {
                    in.position(at);
                    throw fail("has opcode 0x" + Integer.toHexString(op) + " (" + opcodeName(op) + "), which a "
                            + "weights-only reader does not run");
                }
            }
        }
    }

    private Object newContainer(Object container) {
        containers.put(container, new Container());
        return container;
    }

    private void push(Object value) {
        stack.add(value);
    }

    private List<Object> pop(int n) {
        int from = stack.size() - n;
        if (from < (marks.isEmpty() ? 0 : marks.get(marks.size() - 1))) {
            throw fail("pops " + n + " values from a stack that holds fewer above its last mark");
        }
        List<Object> top = new ArrayList<>(stack.subList(from, stack.size()));
        stack.subList(from, stack.size()).clear();
        return top;
    }

    private List<Object> popMark() {
        if (marks.isEmpty()) {
            throw fail("pops to a mark that was never set");
        }
        int from = marks.remove(marks.size() - 1);
        List<Object> top = new ArrayList<>(stack.subList(from, stack.size()));
        stack.subList(from, stack.size()).clear();
        return top;
    }

    /** The container on top of the stack, below the popped items; it must not be inside another value yet. */
    private Object target(String opcode) {
        if (stack.isEmpty() || (!marks.isEmpty() && marks.get(marks.size() - 1) > stack.size() - 1)) {
            throw fail("has " + opcode + " with nothing to add to");
        }
        Object target = stack.get(stack.size() - 1);
        Container c = containers.get(target);
        if (c == null) {
            throw fail("has " + opcode + " on a " + describe(target) + ", not a " + (opcode.startsWith("APPEND")
                    ? "list" : "dict"));
        }
        if (c.sealed) {
            throw fail("has " + opcode + " on a container that is already inside another value (a pickle that "
                    + "changes a value after using it; torch.save never writes one)");
        }
        return target;
    }

    @SuppressWarnings("unchecked")
    private void append(List<Object> items) {
        Object target = target("APPEND");
        if (!(target instanceof List<?>)) {
            throw fail("has APPEND on a dict");
        }
        for (Object item : items) {
            nest(target, item);
            ((List<Object>) target).add(item);
        }
    }

    @SuppressWarnings("unchecked")
    private void setItems(List<Object> items) {
        if (items.size() % 2 != 0) {
            throw fail("has SETITEMS with an odd number of values");
        }
        Object target = target("SETITEM");
        if (!(target instanceof Map<?, ?>)) {
            throw fail("has SETITEM on a list");
        }
        Map<Object, Object> map = (Map<Object, Object>) target;
        for (int i = 0; i < items.size(); i += 2) {
            Object key = items.get(i);
            if (!(key == null || key instanceof String || key instanceof Long || key instanceof Double
                    || key instanceof Boolean)) {
                throw fail("has a dict key that is a " + describe(key) + "; keys must be strings, ints, floats, "
                        + "booleans or None");
            }
            if (map.containsKey(key)) {
                throw fail("repeats the dict key " + describe(key));
            }
            nest(target, items.get(i + 1));
            map.put(key, items.get(i + 1));
        }
    }

    /** Puts {@code child} inside {@code parent}: seals the child and bounds the parent's depth. */
    private void nest(Object parent, Object child) {
        int depth = depthOf(child);
        Container c = containers.get(child);
        if (c != null) {
            c.sealed = true;
        }
        Container p = containers.get(parent);
        if (p.sealed) {
            throw fail("puts a container inside itself");
        }
        p.depth = Math.max(p.depth, depth + 1);
        if (p.depth > MAX_DEPTH) {
            throw fail("nests lists, dicts and tuples deeper than " + MAX_DEPTH);
        }
    }

    private int depthOf(Object value) {
        if (value instanceof Global || value instanceof StorageClass || persistentIds.containsKey(value)) {
            throw fail("holds a global inside a value (only a persistent id may name a storage type)");
        }
        Container c = containers.get(value);
        if (c != null) {
            return c.depth;
        }
        if (value instanceof PickleValues.Tuple t) {
            return tupleDepths.getOrDefault(t, 1);
        }
        return 0;
    }

    /** The depth of each tuple made, by identity (tuples are complete when made). */
    private final Map<Object, Integer> tupleDepths = new IdentityHashMap<>();
    /** The tuples that hold a storage class: usable as a persistent id only. */
    private final Map<Object, Boolean> persistentIds = new IdentityHashMap<>();

    private PickleValues.Tuple tuple(List<Object> items) {
        int depth = 1;
        boolean storageClass = false;
        for (Object item : items) {
            if (item instanceof StorageClass) {
                // Only a persistent id holds one; persistentId takes it out, and nest refuses such a tuple.
                storageClass = true;
                continue;
            }
            depth = Math.max(depth, depthOf(item) + 1);
            Container c = containers.get(item);
            if (c != null) {
                c.sealed = true;
            }
        }
        if (depth > MAX_DEPTH) {
            throw fail("nests lists, dicts and tuples deeper than " + MAX_DEPTH);
        }
        PickleValues.Tuple tuple = new PickleValues.Tuple(items);
        tupleDepths.put(tuple, depth);
        if (storageClass) {
            persistentIds.put(tuple, Boolean.TRUE);
        }
        return tuple;
    }

    private void put(long index) {
        if (stack.isEmpty()) {
            throw fail("memoizes from an empty stack");
        }
        if (!memo.containsKey(index) && memo.size() >= MAX_MEMO) {
            throw fail("memoizes more than " + MAX_MEMO + " values");
        }
        memo.put(index, stack.get(stack.size() - 1));
    }

    private Object get(long index) {
        if (!memo.containsKey(index)) {
            throw fail("reads memo entry " + index + ", which was never written");
        }
        return memo.get(index);
    }

    private Object global(String module, String name) {
        if (module.equals("torch._utils") && name.equals("_rebuild_tensor_v2")) {
            return Global.REBUILD_TENSOR;
        }
        if (module.equals("collections") && name.equals("OrderedDict")) {
            return Global.ORDERED_DICT;
        }
        if (module.equals("torch") && STORAGES.contains(name)) {
            return new StorageClass(TensorKind.ofStorageName(name));
        }
        throw fail("asks for the global " + Messages.shortened(module) + "." + Messages.shortened(name)
                + ", which is not allowed: a weights-only reader loads only torch._utils._rebuild_tensor_v2, "
                + "collections.OrderedDict and the storages " + new java.util.TreeSet<>(STORAGES));
    }

    private Object persistentId(Object pid) {
        if (!(pid instanceof PickleValues.Tuple t) || t.items().size() != 5 || !"storage".equals(t.items().get(0))) {
            throw fail("has a persistent id that is not ('storage', type, key, location, numel)");
        }
        List<Object> f = t.items();
        if (!(f.get(1) instanceof StorageClass type)) {
            throw fail("has a persistent id whose storage type is a " + describe(f.get(1)));
        }
        if (!(f.get(2) instanceof String key) || !(f.get(3) instanceof String)) {
            throw fail("has a persistent id whose key or location is not a string");
        }
        if (!(f.get(4) instanceof Long numel) || numel < 0) {
            throw fail("has a persistent id whose element count is not an int >= 0, got " + describe(f.get(4)));
        }
        return new PickleValues.StorageRef(type.kind(), key, numel);
    }

    private Object reduce(Object callable, Object args) {
        if (!(args instanceof PickleValues.Tuple tuple)) {
            throw fail("calls with arguments that are not a tuple");
        }
        List<Object> a = tuple.items();
        if (callable == Global.ORDERED_DICT) {
            if (!a.isEmpty()) {
                throw fail("calls collections.OrderedDict with arguments; torch.save passes none");
            }
            return newContainer(new LinkedHashMap<>());
        }
        if (callable != Global.REBUILD_TENSOR) {
            throw fail("calls a " + describe(callable) + "; only allowed globals can be called");
        }
        if (a.size() != 6 && a.size() != 7) {
            throw fail("calls _rebuild_tensor_v2 with " + a.size() + " arguments; it takes 6 or 7");
        }
        if (!(a.get(0) instanceof PickleValues.StorageRef storage)) {
            throw fail("calls _rebuild_tensor_v2 on a " + describe(a.get(0)) + ", not a storage");
        }
        if (!(a.get(1) instanceof Long offset)) {
            throw fail("calls _rebuild_tensor_v2 with a storage offset that is not an int");
        }
        long[] size = ints(a.get(2), "size");
        long[] stride = ints(a.get(3), "stride");
        if (size.length != stride.length) {
            throw fail("calls _rebuild_tensor_v2 with " + size.length + " sizes and " + stride.length + " strides");
        }
        if (!(a.get(4) instanceof Boolean)) {
            throw fail("calls _rebuild_tensor_v2 with requires_grad that is not a boolean");
        }
        if (!(a.get(5) instanceof Map<?, ?> hooks) || !hooks.isEmpty()) {
            throw fail("calls _rebuild_tensor_v2 with backward hooks; a saved tensor has none");
        }
        if (a.size() == 7 && a.get(6) != null && !(a.get(6) instanceof Map<?, ?> m && m.isEmpty())) {
            throw fail("calls _rebuild_tensor_v2 with Python attributes for the tensor, which are not read");
        }
        return new PickleValues.TensorRef(storage, offset, size, stride);
    }

    private long[] ints(Object value, String what) {
        if (!(value instanceof PickleValues.Tuple t)) {
            throw fail("calls _rebuild_tensor_v2 with a " + what + " that is not a tuple");
        }
        long[] out = new long[t.items().size()];
        for (int i = 0; i < out.length; i++) {
            if (!(t.items().get(i) instanceof Long l)) {
                throw fail("calls _rebuild_tensor_v2 with a " + what + " that holds a " + describe(t.items().get(i)));
            }
            out[i] = l;
        }
        return out;
    }

    private int u8() {
        need(1, "a 1-byte argument");
        return in.get() & 0xff;
    }

    private int int32() {
        need(4, "a 4-byte argument");
        return in.getInt();
    }

    private long uint32(String opcode) {
        need(4, opcode + "'s length");
        return in.getInt() & 0xffffffffL;
    }

    private double float64() {
        need(8, "BINFLOAT's 8 bytes");
        // The one big-endian field of a pickle.
        double value = in.order(ByteOrder.BIG_ENDIAN).getDouble();
        in.order(ByteOrder.LITTLE_ENDIAN);
        return value;
    }

    private int u16() {
        need(2, "a 2-byte argument");
        return in.getShort() & 0xffff;
    }

    private long long1() {
        int n = u8();
        if (n > 8) {
            throw fail("has a LONG1 of " + n + " bytes; ints beyond 64 bits are not read");
        }
        need(n, "LONG1's bytes");
        long v = 0;
        for (int i = 0; i < n; i++) {
            v |= (in.get() & 0xffL) << (8 * i);
        }
        if (n > 0 && n < 8 && (v & (1L << (8 * n - 1))) != 0) {
            v |= -1L << (8 * n); // sign-extend
        }
        return v;
    }

    private String utf8(long length) {
        need(length, "a string's bytes");
        byte[] bytes = new byte[(int) length];
        in.get(bytes);
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw fail("has a string that is not valid UTF-8");
        }
    }

    private String line(String opcode) {
        int start = in.position();
        while (in.hasRemaining()) {
            if (in.get() == '\n') {
                byte[] bytes = new byte[in.position() - start - 1];
                in.get(start, bytes);
                return new String(bytes, StandardCharsets.US_ASCII);
            }
        }
        throw fail("ends inside the text of a " + opcode);
    }

    private void skip(int n, String what) {
        need(n, what);
        in.position(in.position() + n);
    }

    private void need(long n, String what) {
        if (in.remaining() < n) {
            throw fail("ends inside " + what);
        }
    }

    private static String describe(Object value) {
        if (value == null) {
            return "None";
        }
        if (value instanceof String s) {
            return "'" + Messages.shortened(s) + "'";
        }
        if (value instanceof Long || value instanceof Double || value instanceof Boolean) {
            return value.toString();
        }
        if (value instanceof Global g) {
            return g == Global.REBUILD_TENSOR ? "torch._utils._rebuild_tensor_v2" : "collections.OrderedDict";
        }
        if (value instanceof StorageClass s) {
            return "torch." + s.kind().storageName();
        }
        if (value instanceof Map<?, ?>) {
            return "dict";
        }
        if (value instanceof List<?>) {
            return "list";
        }
        if (value instanceof PickleValues.Tuple) {
            return "tuple";
        }
        if (value instanceof PickleValues.StorageRef) {
            return "storage";
        }
        if (value instanceof PickleValues.TensorRef) {
            return "tensor";
        }
        return value.getClass().getSimpleName();
    }

    private static String opcodeName(int op) {
        return switch (op) {
            case 'b' -> "BUILD";
            case 'i' -> "INST";
            case 'o' -> "OBJ";
            case 0x81 -> "NEWOBJ";
            case 0x92 -> "NEWOBJ_EX";
            case 'P' -> "PERSID";
            case 'c' -> "GLOBAL";
            case 'I' -> "INT";
            case 'L' -> "LONG";
            case 'S' -> "STRING";
            case 'V' -> "UNICODE";
            case 'F' -> "FLOAT";
            case 'g' -> "GET";
            case 'p' -> "PUT";
            case 'd' -> "DICT";
            case 'l' -> "LIST";
            case 0x8b -> "LONG4";
            case 'B' -> "BINBYTES";
            case 'C' -> "SHORT_BINBYTES";
            case 0x8d -> "BINUNICODE8";
            case 0x8e -> "BINBYTES8";
            case 0x8f -> "EMPTY_SET";
            case 0x90 -> "ADDITEMS";
            case 0x91 -> "FROZENSET";
            case 0x82 -> "EXT1";
            case 0x83 -> "EXT2";
            case 0x84 -> "EXT4";
            case '2' -> "DUP";
            default -> "unknown";
        };
    }

    private FormatException fail(String rule) {
        return new FormatException("data.pkl at byte " + in.position(), rule);
    }
}
