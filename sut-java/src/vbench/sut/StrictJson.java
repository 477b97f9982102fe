package vbench.sut;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader: RFC 8259 and nothing more. No NaN or Infinity, no repeated keys, no comments, no
 * single quotes, no trailing commas; broken JSON is never repaired (INTERPRETATION §2 and §5 step 2).
 *
 * Objects become {@link LinkedHashMap} (key order kept), arrays {@link ArrayList}, integers written without a
 * fraction or exponent {@link Long} (or {@link BigInteger} when they do not fit), every other number
 * {@link Double}. Integer and non-integer spellings stay apart because the reply contract wants an integer
 * count, and {@code 2.0} is not one.
 */
public final class StrictJson {
    /** Nesting beyond this is refused like a decoder that runs out of stack. */
    public static final int MAX_DEPTH = 900;

    /** The text is not strict JSON. */
    public static class JsonError extends Exception {
        private static final long serialVersionUID = 1L;
        public final int pos;

        JsonError(String message, int pos) {
            super(message + " at character " + pos);
            this.pos = pos;
        }
    }

    /** Nesting deeper than {@link #MAX_DEPTH}. */
    public static final class TooDeep extends JsonError {
        private static final long serialVersionUID = 1L;
        TooDeep(int pos) {
            super("nesting too deep", pos);
        }
    }

    /** One decoded value and where it ended. */
    public record Decoded(Object value, int end) {}

    /** Another library reading JSON for the SUT (sut-java/jackson/), with the same results and errors. */
    public interface Reader {
        Object parse(String text) throws JsonError;

        Decoded decodeAt(String text, int start) throws JsonError;
    }

    private static volatile Reader other;

    /** Read every JSON text with {@code reader} from now on (null: this strict reader). */
    public static void use(Reader reader) {
        other = reader;
    }

    private final String text;
    private int pos;

    private StrictJson(String text, int pos) {
        this.text = text;
        this.pos = pos;
    }

    /** The whole text as one JSON value (whitespace around it allowed); anything after it is an error. */
    public static Object parse(String text) throws JsonError {
        if (other != null) {
            return other.parse(text);
        }
        StrictJson reader = new StrictJson(text, 0);
        reader.skipWs();
        Object value = reader.value(0);
        reader.skipWs();
        if (reader.pos != text.length()) {
            throw new JsonError("extra data after the JSON value", reader.pos);
        }
        return value;
    }

    /** One JSON value starting exactly at {@code start}; text after it is left alone. */
    public static Decoded decodeAt(String text, int start) throws JsonError {
        if (other != null) {
            return other.decodeAt(text, start);
        }
        StrictJson reader = new StrictJson(text, start);
        Object value = reader.value(0);
        return new Decoded(value, reader.pos);
    }

    private void skipWs() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                pos++;
            } else {
                return;
            }
        }
    }

    private Object value(int depth) throws JsonError {
        if (pos >= text.length()) {
            throw new JsonError("expected a value", pos);
        }
        char c = text.charAt(pos);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
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
                throw new JsonError("expected a value", pos);
        }
    }

    private Object literal(String word, Object value) throws JsonError {
        if (!text.startsWith(word, pos)) {
            throw new JsonError("expected a value", pos);
        }
        pos += word.length();
        return value;
    }

    private Map<String, Object> object(int depth) throws JsonError {
        if (depth > MAX_DEPTH) {
            throw new TooDeep(pos);
        }
        pos++;
        Map<String, Object> out = new LinkedHashMap<>();
        skipWs();
        if (pos < text.length() && text.charAt(pos) == '}') {
            pos++;
            return out;
        }
        while (true) {
            skipWs();
            if (pos >= text.length() || text.charAt(pos) != '"') {
                throw new JsonError("expected a property name in double quotes", pos);
            }
            int keyAt = pos;
            String key = string();
            if (out.containsKey(key)) {
                throw new JsonError("repeated key " + key, keyAt);
            }
            skipWs();
            expect(':');
            skipWs();
            out.put(key, value(depth));
            skipWs();
            if (pos < text.length() && text.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect('}');
            return out;
        }
    }

    private List<Object> array(int depth) throws JsonError {
        if (depth > MAX_DEPTH) {
            throw new TooDeep(pos);
        }
        pos++;
        List<Object> out = new ArrayList<>();
        skipWs();
        if (pos < text.length() && text.charAt(pos) == ']') {
            pos++;
            return out;
        }
        while (true) {
            skipWs();
            out.add(value(depth));
            skipWs();
            if (pos < text.length() && text.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect(']');
            return out;
        }
    }

    private void expect(char c) throws JsonError {
        if (pos >= text.length() || text.charAt(pos) != c) {
            throw new JsonError("expected '" + c + "'", pos);
        }
        pos++;
    }

    private String string() throws JsonError {
        int start = pos;
        pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (pos >= text.length()) {
                throw new JsonError("unterminated string", start);
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                throw new JsonError("control character in a string", pos - 1);
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (pos >= text.length()) {
                throw new JsonError("unterminated string", start);
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u': out.append(hex4()); break;
                default: throw new JsonError("invalid escape", pos - 2);
            }
        }
    }

    private char hex4() throws JsonError {
        if (pos + 4 > text.length()) {
            throw new JsonError("invalid \\u escape", pos - 2);
        }
        int value = 0;
        for (int i = 0; i < 4; i++) {
            int digit = Character.digit(text.charAt(pos + i), 16);
            if (digit < 0) {
                throw new JsonError("invalid \\u escape", pos - 2);
            }
            value = value * 16 + digit;
        }
        pos += 4;
        return (char) value;
    }

    private Object number() throws JsonError {
        int start = pos;
        if (text.charAt(pos) == '-') {
            pos++;
        }
        if (pos >= text.length()) {
            throw new JsonError("expected a value", start);
        }
        char first = text.charAt(pos);
        if (first == '0') {
            pos++;
        } else if (first >= '1' && first <= '9') {
            digits();
        } else {
            throw new JsonError("expected a value", start);
        }
        boolean integral = true;
        if (pos < text.length() && text.charAt(pos) == '.') {
            int dot = pos;
            pos++;
            if (digits() == 0) {
                pos = dot; // "1." is the number 1 followed by text, as a decoder reads it
            } else {
                integral = false;
            }
        }
        if (pos < text.length() && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
            int mark = pos;
            pos++;
            if (pos < text.length() && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) {
                pos++;
            }
            if (digits() == 0) {
                pos = mark;
            } else {
                integral = false;
            }
        }
        String literal = text.substring(start, pos);
        if (!integral) {
            return Double.parseDouble(literal);
        }
        BigInteger big = new BigInteger(literal);
        return big.bitLength() < 64 ? (Object) big.longValue() : big;
    }

    private int digits() {
        int start = pos;
        while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') {
            pos++;
        }
        return pos - start;
    }
}
