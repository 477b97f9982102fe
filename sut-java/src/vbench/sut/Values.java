package vbench.sut;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Small readers over decoded JSON (maps, lists, strings): the executor's output is data under test. */
final class Values {
    private Values() {}

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value) {
        return value instanceof Map ? (Map<String, Object>) value : null;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object value) {
        return value instanceof List ? (List<Object>) value : null;
    }

    static String str(Object value) {
        return value instanceof String ? (String) value : null;
    }

    /** A string that is present and not empty, else null. */
    static String text(Object value) {
        return value instanceof String && !((String) value).isEmpty() ? (String) value : null;
    }

    static boolean isStrList(Object value) {
        List<Object> items = list(value);
        if (items == null) {
            return false;
        }
        for (Object item : items) {
            if (!(item instanceof String)) {
                return false;
            }
        }
        return true;
    }

    /** An insertion-ordered map built from alternating keys and values. */
    static Map<String, Object> obj(Object... pairs) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            out.put((String) pairs[i], pairs[i + 1]);
        }
        return out;
    }

    /** Whitespace as Unicode's White_Space property has it (no-break spaces and NEL included, unlike isWhitespace). */
    static boolean isSpace(int c) {
        return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == 0x85;
    }

    /** Nothing but whitespace (or nothing at all). */
    static boolean blank(String text) {
        return text.codePoints().allMatch(Values::isSpace);
    }

    /** The text without leading and trailing whitespace. */
    static String strip(String text) {
        int start = 0;
        int end = text.length();
        while (start < end && isSpace(text.charAt(start))) {
            start++;
        }
        while (end > start && isSpace(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(start, end);
    }
}
