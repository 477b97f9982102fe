package vbench.sut;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The executor's structured output (INTERPRETATION §2): its parse status, and its claims and evidence bindings
 * as the gatekeeper and the policy read them. Broken JSON is never repaired.
 */
final class Executor {
    private Executor() {}

    /** executor_output_parse_status, plus the object when it is valid. */
    record Parsed(String status, String reason, Map<String, Object> structured) {
        boolean valid() {
            return "valid".equals(status);
        }

        Map<String, Object> json() {
            return Values.obj("status", status, "reason", reason);
        }
    }

    /** A binding object as a claim names it, with its path suffix and whether its form is well typed. */
    record RawBinding(String suffix, Map<String, Object> binding, boolean wellTyped) {}

    static Parsed parse(String raw) {
        if (raw == null || Values.blank(raw)) {
            return new Parsed("missing", "the executor emitted no structured output", null);
        }
        Object value;
        try {
            value = StrictJson.parse(raw);
        } catch (StrictJson.JsonError e) {
            return new Parsed("malformed", "not JSON: " + e.getMessage(), null);
        }
        Map<String, Object> doc = Values.map(value);
        if (doc == null) {
            return new Parsed("malformed", "not a JSON object", null);
        }
        if (Values.list(doc.get("claims")) == null) {
            return new Parsed("malformed", "no readable `claims` list", null);
        }
        return new Parsed("valid", null, doc);
    }

    /** The claim objects of a valid output, with their index in `claims`. */
    static List<Map.Entry<Integer, Map<String, Object>>> claimObjects(Parsed parsed) {
        List<Map.Entry<Integer, Map<String, Object>>> out = new ArrayList<>();
        if (parsed.structured() == null) {
            return out;
        }
        List<Object> claims = Values.list(parsed.structured().get("claims"));
        for (int i = 0; i < claims.size(); i++) {
            Map<String, Object> claim = Values.map(claims.get(i));
            if (claim != null) {
                out.add(Map.entry(i, claim));
            }
        }
        return out;
    }

    /**
     * Every binding object a claim names. A single object given for `evidence_bindings` is still a binding
     * (mistyped, so it never resolves), and so is one whose `source_invocation_ids` is a bare value (§3).
     */
    static List<RawBinding> bindings(Map<String, Object> claim) {
        List<RawBinding> out = new ArrayList<>();
        Object value = claim.get("evidence_bindings");
        Map<String, Object> single = Values.map(value);
        if (single != null) {
            out.add(new RawBinding("", single, false));
            return out;
        }
        List<Object> items = Values.list(value);
        if (items == null) {
            return out;
        }
        for (int i = 0; i < items.size(); i++) {
            Map<String, Object> b = Values.map(items.get(i));
            if (b != null) {
                Object ids = b.get("source_invocation_ids");
                out.add(new RawBinding("[" + i + "]", b, ids == null || ids instanceof List));
            }
        }
        return out;
    }

    /** The ids a binding names whatever their type: a list's items, or a bare value as one id (§3). */
    static List<String> invocationIds(Map<String, Object> binding) {
        Object ids = binding.get("source_invocation_ids");
        List<String> out = new ArrayList<>();
        if (ids == null) {
            return out;
        }
        List<Object> items = Values.list(ids);
        for (Object id : items != null ? items : List.of(ids)) {
            out.add(id instanceof String ? (String) id : "<not a string: " + id + ">");
        }
        return out;
    }

    /** The claims with a string claim_id, first occurrence of each id; `critical` only when literally true. */
    static List<Model.Claim> claims(Parsed parsed) {
        List<Model.Claim> out = new ArrayList<>();
        if (!parsed.valid()) {
            return out;
        }
        Set<String> seen = new HashSet<>();
        for (Map.Entry<Integer, Map<String, Object>> entry : claimObjects(parsed)) {
            Map<String, Object> raw = entry.getValue();
            String id = Values.str(raw.get("claim_id"));
            if (id == null || !seen.add(id)) {
                continue;
            }
            List<Model.Ref> refs = new ArrayList<>();
            for (RawBinding b : bindings(raw)) {
                refs.add(new Model.Ref(Values.text(b.binding().get("trace_ref")), Values.text(b.binding().get("tool_name")),
                        invocationIds(b.binding()), b.wellTyped()));
            }
            String statement = Values.str(raw.get("statement"));
            out.add(new Model.Claim(id, statement == null ? "" : statement, Boolean.TRUE.equals(raw.get("critical")), refs));
        }
        return out;
    }
}
