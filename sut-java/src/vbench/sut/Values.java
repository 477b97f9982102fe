package vbench.sut;

import java.util.ArrayList;
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

    static List<Object> copyList(List<?> items) {
        return new ArrayList<>(items);
    }
}
