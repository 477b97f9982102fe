package vbench.sut;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The Java SUT with Jackson reading and writing every JSON text, in the configurations a team runs it with.
 *
 * Usage: {@code java -jar vbench-sut-jackson.jar --jackson CONFIG[,CONFIG...] [the SUT's own arguments]}, CONFIG
 * one of: {@code defaults} (FAIL_ON_TRAILING_TOKENS and STRICT_DUPLICATE_DETECTION on, as the protocol needs),
 * {@code indent} (INDENT_OUTPUT: answers, stored rows and the prompt's JSON pretty-printed), {@code non-null}
 * (Include.NON_NULL for every value, map entries included), {@code keep-last-duplicates} (no
 * STRICT_DUPLICATE_DETECTION: Jackson's default, the last of a repeated key wins).
 */
public final class JacksonSut {
    static final Set<String> CONFIGS = Set.of("defaults", "indent", "non-null", "keep-last-duplicates");

    private JacksonSut() {}

    public static void main(String[] args) throws Exception {
        Set<String> config = new LinkedHashSet<>(List.of("defaults"));
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--jackson") && i + 1 < args.length) {
                config = new LinkedHashSet<>(Arrays.asList(args[++i].split(",")));
            } else {
                rest.add(args[i]);
            }
        }
        if (!CONFIGS.containsAll(config)) {
            System.err.println("unknown --jackson configuration in " + config + "; known: " + CONFIGS);
            System.exit(2);
        }
        ObjectMapper writer = writer(config);
        StrictJson.use(new Reader(!config.contains("keep-last-duplicates")));
        Json json = value -> {
            try {
                return writer.writeValueAsString(value);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        };
        SutServer.run(rest.toArray(new String[0]), json, SutServer.NAME + " (Jackson: " + String.join(", ", config) + ")");
    }

    static ObjectMapper writer(Set<String> config) {
        JsonMapper.Builder builder = JsonMapper.builder();
        if (config.contains("indent")) {
            builder.enable(SerializationFeature.INDENT_OUTPUT);
        }
        if (config.contains("non-null")) {
            builder.defaultPropertyInclusion(JsonInclude.Value.construct(JsonInclude.Include.NON_NULL, JsonInclude.Include.NON_NULL));
        }
        return builder.build();
    }

    /** Jackson reading JSON as {@link StrictJson} returns it: objects as LinkedHashMap, integers as Long or
     * BigInteger, every other number as Double; errors as {@link StrictJson.JsonError}. */
    static final class Reader implements StrictJson.Reader {
        private final ObjectMapper whole;
        private final ObjectMapper prefix;

        Reader(boolean strictDuplicates) {
            JsonMapper.Builder wholeText = JsonMapper.builder().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
            JsonMapper.Builder oneValue = JsonMapper.builder();
            if (strictDuplicates) {
                wholeText.enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION);
                oneValue.enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION);
            }
            whole = wholeText.build();
            prefix = oneValue.build();
        }

        @Override
        public Object parse(String text) throws StrictJson.JsonError {
            try {
                JsonNode node = whole.readTree(text);
                if (node == null || node.isMissingNode()) {
                    throw new StrictJson.JsonError("no JSON value", 0);
                }
                return plain(node);
            } catch (JsonProcessingException e) {
                throw error(e);
            } catch (StackOverflowError e) {
                throw new StrictJson.TooDeep(0);
            }
        }

        @Override
        public StrictJson.Decoded decodeAt(String text, int start) throws StrictJson.JsonError {
            JsonFactory factory = prefix.getFactory();
            try (JsonParser parser = factory.createParser(text.substring(start))) {
                JsonNode node = prefix.readTree(parser);
                if (node == null) {
                    throw new StrictJson.JsonError("no JSON value", start);
                }
                int end = start + (int) parser.getCurrentLocation().getCharOffset();
                return new StrictJson.Decoded(plain(node), end);
            } catch (JsonProcessingException e) {
                throw error(e);
            } catch (IOException e) {
                throw new StrictJson.JsonError(e.getMessage(), start);
            } catch (StackOverflowError e) {
                throw new StrictJson.TooDeep(start);
            }
        }

        private static StrictJson.JsonError error(JsonProcessingException e) {
            long at = e.getLocation() == null ? 0 : e.getLocation().getCharOffset();
            return new StrictJson.JsonError(e.getOriginalMessage(), (int) Math.max(0, at));
        }

        private static Object plain(JsonNode node) {
            if (node.isObject()) {
                Map<String, Object> out = new LinkedHashMap<>();
                Iterator<Map.Entry<String, JsonNode>> fields = node.fields();
                while (fields.hasNext()) {
                    Map.Entry<String, JsonNode> field = fields.next();
                    out.put(field.getKey(), plain(field.getValue()));
                }
                return out;
            }
            if (node.isArray()) {
                List<Object> out = new ArrayList<>();
                node.forEach(item -> out.add(plain(item)));
                return out;
            }
            if (node.isTextual()) {
                return node.textValue();
            }
            if (node.isBoolean()) {
                return node.booleanValue();
            }
            if (node.isNull()) {
                return null;
            }
            if (node.isIntegralNumber()) {
                BigInteger value = node.bigIntegerValue();
                return value.bitLength() < 64 ? (Object) value.longValue() : value;
            }
            return node.doubleValue();
        }
    }
}
