package dev.muon.state;

import dev.muon.internal.Messages;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A strict, bounded JSON reader and a writer, for the headers of muon-core's files (RFC 8259; no dependency).
 *
 * <p>Values: objects as {@link LinkedHashMap} (file order; a repeated key is refused), arrays as {@link ArrayList},
 * strings, integers as {@link Long} (a number without fraction or exponent that does not fit is refused), other
 * numbers as {@link Double} parsed by {@link Double#parseDouble} (so Java's shortest decimal form of a double reads
 * back bit for bit), booleans, and null. Reading is iterative over its input with a bounded depth
 * ({@link #MAX_DEPTH}), so no input can exhaust the stack; every malformed input is a {@link FormatException} naming
 * the byte offset.
 *
 * <p>Not API (see this package).
 */
final class Json {
    /** The deepest nesting of arrays and objects read; muon-core's headers need 4. */
    public static final int MAX_DEPTH = 32;

    private final String text;
    private final String what;
    private int pos;
    private int depth;

    private Json(String text, String what) {
        this.text = text;
        this.what = what;
    }

    /**
     * Parses one JSON value that spans the whole text (whitespace around it allowed).
     *
     * @param text the text
     * @param what how to name the text in a message (e.g. "the header")
     * @return the value
     * @throws FormatException if the text is not one well-formed JSON value within the bounds
     */
    public static Object parse(String text, String what) {
        Json json = new Json(text, what);
        json.skipWhitespace();
        Object value = json.value();
        json.skipWhitespace();
        if (json.pos != text.length()) {
            throw json.fail("has text after its JSON value");
        }
        return value;
    }

    /**
     * A parsed value that must be an integer ({@link Long}).
     *
     * @param value the value
     * @param where the entry it is, for the message
     * @param shown how the message shows a value of another kind
     * @return it
     * @throws FormatException if it is not an integer
     */
    static long integer(Object value, String where, Function<Object, String> shown) {
        if (!(value instanceof Long l)) {
            throw new FormatException(where, "must be an integer, got " + shown.apply(value));
        }
        return l;
    }

    /**
     * A parsed value that must be a number ({@link Double} or {@link Long}).
     *
     * @param value the value
     * @param where the entry it is, for the message
     * @param shown how the message shows a value of another kind
     * @return it
     * @throws FormatException if it is not a number
     */
    static double number(Object value, String where, Function<Object, String> shown) {
        if (value instanceof Double d) {
            return d;
        }
        if (value instanceof Long l) {
            return l;
        }
        throw new FormatException(where, "must be a number, got " + shown.apply(value));
    }

    /**
     * Writes a value as compact JSON: maps with string keys, lists, strings, {@link Long}, {@link Integer},
     * finite {@link Double}, {@link Boolean} and null.
     *
     * @param value the value
     * @return its JSON text
     * @throws IllegalArgumentException if the value holds another type or a non-finite double
     */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            quote(s, out);
        } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer) {
            out.append(value);
        } else if (value instanceof Double d) {
            if (!Double.isFinite(d)) {
                throw new IllegalArgumentException("JSON has no value for the double " + d);
            }
            out.append(d);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!(e.getKey() instanceof String key)) {
                    throw new IllegalArgumentException("JSON object keys must be strings, got " + e.getKey());
                }
                out.append(first ? "" : ",");
                first = false;
                quote(key, out);
                out.append(':');
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                out.append(i == 0 ? "" : ",");
                write(list.get(i), out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("JSON cannot hold a " + value.getClass().getName());
        }
    }

    private static void quote(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    // The nesting is bounded by MAX_DEPTH, so the recursion below is too.
    private Object value() {
        if (pos >= text.length()) {
            throw fail("ends where a value was expected");
        }
        char c = text.charAt(pos);
        switch (c) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw fail("has '" + printable(c) + "' where a value was expected");
        }
    }

    private Map<String, Object> object() {
        Map<String, Object> map = new LinkedHashMap<>();
        if (enterEmpty('}')) {
            return map;
        }
        do {
            skipWhitespace();
            if (peek() != '"') {
                throw fail("has an object key that is not a string");
            }
            int keyAt = pos;
            String key = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            if (map.containsKey(key)) {
                pos = keyAt;
                throw fail("repeats the key \"" + Messages.shortened(key) + "\"");
            }
            map.put(key, value());
        } while (!closes('}', "an object"));
        return map;
    }

    private List<Object> array() {
        List<Object> list = new ArrayList<>();
        if (enterEmpty(']')) {
            return list;
        }
        do {
            skipWhitespace();
            list.add(value());
        } while (!closes(']', "an array"));
        return list;
    }

    /**
     * Enters the object or array whose opening character is at {@code pos}, past it: true, and left again, if
     * {@code close} ends it at once.
     */
    private boolean enterEmpty(char close) {
        enter();
        pos++;
        skipWhitespace();
        if (peek() == close) {
            pos++;
            depth--;
            return true;
        }
        return false;
    }

    /**
     * Past a member of an object or array: true, and left, at {@code close}; false at a comma, before the next
     * member; anything else is refused.
     */
    private boolean closes(char close, String inside) {
        skipWhitespace();
        char c = next(inside);
        if (c == close) {
            depth--;
            return true;
        }
        if (c != ',') {
            pos--;
            throw fail("has '" + printable(c) + "' where ',' or '" + close + "' was expected");
        }
        return false;
    }

    private void enter() {
        if (++depth > MAX_DEPTH) {
            throw fail("nests arrays and objects deeper than " + MAX_DEPTH);
        }
    }

    private String string() {
        pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = next("a string");
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                pos--;
                throw fail("has a control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char e = next("a string");
            switch (e) {
                case '"', '\\', '/' -> out.append(e);
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) {
                        throw fail("ends inside a \\u escape");
                    }
                    int code = 0;
                    for (int k = 0; k < 4; k++) {
                        int digit = Character.digit(text.charAt(pos + k), 16);
                        if (digit < 0) {
                            throw fail("has a \\u escape that is not 4 hex digits");
                        }
                        code = code * 16 + digit;
                    }
                    pos += 4;
                    out.append((char) code);
                }
                default -> {
                    pos--;
                    throw fail("has the unknown escape '\\" + printable(e) + "'");
                }
            }
        }
    }

    private Object number() {
        int start = pos;
        boolean integral = true;
        if (peek() == '-') {
            pos++;
        }
        if (peek() == '0') {
            pos++;
        } else if (isDigit(peek())) {
            digits();
        } else {
            throw fail("has a number without digits");
        }
        if (peek() == '.') {
            integral = false;
            pos++;
            if (!isDigit(peek())) {
                throw fail("has a number with no digit after '.'");
            }
            digits();
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            pos++;
            if (peek() == '+' || peek() == '-') {
                pos++;
            }
            if (!isDigit(peek())) {
                throw fail("has a number with no digit in its exponent");
            }
            digits();
        }
        String token = text.substring(start, pos);
        if (integral) {
            try {
                return Long.parseLong(token);
            } catch (NumberFormatException e) {
                pos = start;
                throw fail("has the integer " + Messages.shortened(token) + ", outside the 64-bit range");
            }
        }
        return Double.parseDouble(token);
    }

    private void digits() {
        while (isDigit(peek())) {
            pos++;
        }
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) {
            throw fail("has an unknown literal where a value was expected");
        }
        pos += word.length();
        return value;
    }

    private void skipWhitespace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private char peek() {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private char next(String inside) {
        if (pos >= text.length()) {
            throw fail("ends inside " + inside);
        }
        return text.charAt(pos++);
    }

    private void expect(char c) {
        char got = next("an object");
        if (got != c) {
            pos--;
            throw fail("has '" + printable(got) + "' where '" + c + "' was expected");
        }
    }

    private static String printable(char c) {
        return c < 0x20 || c > 0x7e ? String.format("\\u%04x", (int) c) : String.valueOf(c);
    }

    private FormatException fail(String rule) {
        return new FormatException(what, "is not valid JSON: at character " + pos + " it " + rule);
    }
}
