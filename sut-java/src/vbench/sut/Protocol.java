package vbench.sut;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Reading a `POST /verify` body (verify-request.schema.json); a bad body is a {@link BadRequest} naming the key. */
final class Protocol {
    private Protocol() {}

    static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;
        BadRequest(String message) {
            super(message);
        }
    }

    static Pipeline.Input read(String body) throws BadRequest {
        Map<String, Object> root;
        try {
            root = Values.map(StrictJson.parse(body));
        } catch (StrictJson.JsonError e) {
            throw new BadRequest("the body is not JSON: " + e.getMessage());
        }
        if (root == null) {
            throw new BadRequest("the body is not a JSON object");
        }
        if (root.containsKey("protocol") && !SutServer.PROTOCOL.equals(root.get("protocol"))) {
            throw new BadRequest("protocol: this SUT speaks " + SutServer.PROTOCOL);
        }
        Map<String, Object> session = object(root, "session", "");
        Map<String, Object> executor = object(root, "executor", "");
        Map<String, Object> verifier = object(root, "verifier", "");
        Map<String, Object> settings = root.get("settings") == null ? Map.of() : object(root, "settings", "");
        List<Map.Entry<String, List<Model.Invocation>>> others = new ArrayList<>();
        List<Object> otherList = optionalList(session, "other_sessions", "session.");
        Set<String> sessionIds = new HashSet<>(Set.of(text(session, "id", "session.")));
        for (int i = 0; i < otherList.size(); i++) {
            Map<String, Object> other = item(otherList.get(i), "session.other_sessions[" + i + "]");
            String at = "session.other_sessions[" + i + "].";
            String id = text(other, "id", at);
            if (!sessionIds.add(id)) {
                throw new BadRequest(at + "id: session id " + id + " repeats; sessions of one request are distinct");
            }
            others.add(Map.entry(id, invocations(optionalList(other, "tool_invocations", at), at + "tool_invocations")));
        }
        Object self = session.get("self_evaluation");
        Map<String, Object> selfEvaluation = self == null ? new LinkedHashMap<>() : object(session, "self_evaluation", "session.");
        Object raw = executor.get("structured_output_raw");
        if (raw != null && !(raw instanceof String)) {
            throw new BadRequest("executor.structured_output_raw: not a string or null");
        }
        Object excerpt = settings.getOrDefault("excerpt_chars", 2000L);
        double limit = excerpt instanceof Number ? ((Number) excerpt).doubleValue() : Double.NaN;
        if (!(limit >= 1 && limit <= Integer.MAX_VALUE && limit == Math.floor(limit))) {
            throw new BadRequest("settings.excerpt_chars: not an integer >= 1"); // 2000, 2000.0 and 2e3 are one number
        }
        Object guard = settings.getOrDefault("claim_guard", Boolean.TRUE);
        if (!(guard instanceof Boolean)) {
            throw new BadRequest("settings.claim_guard: not a boolean");
        }
        Object timeout = settings.getOrDefault("timeout_s", 30.0);
        if (!(timeout instanceof Number) || !(((Number) timeout).doubleValue() > 0)) {
            throw new BadRequest("settings.timeout_s: not a number > 0");
        }
        return new Pipeline.Input(text(session, "id", "session."), string(session, "question", "session."),
                invocations(optionalList(session, "tool_invocations", "session."), "session.tool_invocations"),
                others, selfEvaluation, trace(session.get("tool_trace_summary")),
                string(executor, "final_answer", "executor."), (String) raw,
                string(verifier, "base_url", "verifier."), string(verifier, "model", "verifier."),
                (int) limit, (Boolean) guard, ((Number) timeout).doubleValue());
    }

    private static Map<String, Object> object(Map<String, Object> parent, String key, String at) throws BadRequest {
        Map<String, Object> value = Values.map(parent.get(key));
        if (value == null) {
            throw new BadRequest(at + key + ": missing or not an object");
        }
        return value;
    }

    private static Map<String, Object> item(Object value, String at) throws BadRequest {
        Map<String, Object> out = Values.map(value);
        if (out == null) {
            throw new BadRequest(at + ": not an object");
        }
        return out;
    }

    private static List<Object> optionalList(Map<String, Object> parent, String key, String at) throws BadRequest {
        Object value = parent.get(key);
        if (value == null) {
            return List.of();
        }
        List<Object> out = Values.list(value);
        if (out == null) {
            throw new BadRequest(at + key + ": not a list");
        }
        return out;
    }

    private static String string(Map<String, Object> parent, String key, String at) throws BadRequest {
        Object value = parent.get(key);
        if (!(value instanceof String)) {
            throw new BadRequest(at + key + ": missing or not a string");
        }
        return (String) value;
    }

    private static String text(Map<String, Object> parent, String key, String at) throws BadRequest {
        String value = string(parent, key, at);
        if (value.isEmpty()) {
            throw new BadRequest(at + key + ": empty");
        }
        return value;
    }

    private static String status(Map<String, Object> parent, String at) throws BadRequest {
        Object value = parent.getOrDefault("status", "success");
        if (!"success".equals(value) && !"error".equals(value)) {
            throw new BadRequest(at + "status: not success or error");
        }
        return (String) value;
    }

    private static List<Model.Invocation> invocations(List<Object> items, String at) throws BadRequest {
        List<Model.Invocation> out = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < items.size(); i++) {
            String where = at + "[" + i + "].";
            Map<String, Object> row = item(items.get(i), at + "[" + i + "]");
            Object args = row.get("arguments");
            Map<String, Object> arguments = args == null ? new LinkedHashMap<>() : object(row, "arguments", where);
            Object result = row.getOrDefault("result", "");
            if (!(result instanceof String)) {
                throw new BadRequest(where + "result: not a string");
            }
            String id = text(row, "id", where);
            if (!ids.add(id)) {
                throw new BadRequest(where + "id: " + id + " repeats; invocation ids are unique within a session");
            }
            out.add(new Model.Invocation(id, text(row, "tool_name", where), arguments, status(row, where), (String) result));
        }
        return out;
    }

    private static List<Model.TraceEntry> trace(Object value) throws BadRequest {
        if (value == null) {
            return null;
        }
        List<Object> items = Values.list(value);
        if (items == null) {
            throw new BadRequest("session.tool_trace_summary: not a list or null");
        }
        List<Model.TraceEntry> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            String where = "session.tool_trace_summary[" + i + "].";
            Map<String, Object> e = item(items.get(i), "session.tool_trace_summary[" + i + "]");
            Object ids = e.getOrDefault("source_invocation_ids", List.of());
            if (!Values.isStrList(ids)) {
                throw new BadRequest(where + "source_invocation_ids: not a list of strings");
            }
            List<String> idList = new ArrayList<>();
            Values.list(ids).forEach(x -> idList.add((String) x));
            Object excerpt = e.getOrDefault("result_excerpt", "");
            Object truncated = e.getOrDefault("truncated", Boolean.FALSE);
            if (!(excerpt instanceof String) || !(truncated instanceof Boolean)) {
                throw new BadRequest(where + "result_excerpt or truncated mistyped");
            }
            out.add(new Model.TraceEntry(string(e, "trace_ref", where), string(e, "tool_name", where), idList,
                    status(e, where), (String) excerpt, (Boolean) truncated));
        }
        return out;
    }
}
