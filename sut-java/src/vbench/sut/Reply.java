package vbench.sut;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The verifier reply (INTERPRETATION §5 step 2): the first top-level JSON object in the reply text that is valid
 * JSON of the contract, found in the whole text, in code fences, or in surrounding prose. Broken JSON is never
 * repaired, and a value outside the fixed sets makes an object invalid.
 */
final class Reply {
    private Reply() {}

    private static final Pattern FENCE = Pattern.compile("```(?:json|JSON)?[ \\t]*\\n?(.*?)```", Pattern.DOTALL);
    private static final Pattern VALUE_START = Pattern.compile("\\{\\s*[\"}]|\\[");

    /** The reply's validity: "valid", or "invalid" with why. */
    record Status(String status, String reason, String message) {
        Map<String, Object> json() {
            return Values.obj("status", status, "reason", reason, "message", message);
        }
    }

    record Read(Model.Reply reply, Status status) {}

    static Read read(ModelClient.Call call) {
        if (call.raw() == null && call.error() != null) {
            return invalid("transport", call.error());
        }
        if (call.refusal() != null && !call.refusal().isEmpty()) {
            return invalid("refusal", call.refusal());
        }
        String text = call.raw() == null ? "" : call.raw();
        if (Values.blank(text)) {
            return invalid("empty", "the reply was empty");
        }
        String firstError = null;
        for (Map<String, Object> candidate : objects(text)) {
            List<String> problems = new ArrayList<>();
            Model.Reply reply = validate(candidate, problems);
            if (reply != null) {
                return new Read(reply, new Status("valid", null, null));
            }
            if (firstError == null) {
                firstError = String.join("; ", problems);
            }
        }
        boolean cut = "length".equals(call.finishReason());
        if (firstError == null) {
            return cut ? invalid("truncated", "cut off by max_tokens") : invalid("not_json", "no complete JSON object in the reply");
        }
        return invalid(cut ? "truncated" : "schema", firstError);
    }

    private static Read invalid(String reason, String message) {
        return new Read(null, new Status("invalid", reason, message));
    }

    /** Every JSON object that is the top-level value of a JSON text in `text`, in order: whole, fenced, in prose. */
    static List<Map<String, Object>> objects(String text) {
        List<Map<String, Object>> out = new ArrayList<>();
        List<String> candidates = new ArrayList<>();
        candidates.add(Values.strip(text));
        Matcher fence = FENCE.matcher(text);
        while (fence.find()) {
            candidates.add(Values.strip(fence.group(1)));
        }
        for (String candidate : candidates) {
            try {
                Map<String, Object> obj = Values.map(StrictJson.parse(candidate));
                if (obj != null) {
                    out.add(obj);
                }
            } catch (StrictJson.JsonError e) {
                // not a JSON text: the next candidate
            }
        }
        int index = 0;
        Matcher start = VALUE_START.matcher(text);
        while (index < text.length() && start.find(index)) {
            int at = start.start();
            try {
                StrictJson.Decoded d = StrictJson.decodeAt(text, at);
                Map<String, Object> obj = Values.map(d.value());
                if (obj != null) {
                    out.add(obj);
                }
                index = d.end();
            } catch (StrictJson.TooDeep e) {
                index = bracketEnd(text, at);
            } catch (StrictJson.JsonError e) {
                index = at + 1;
            }
        }
        return out;
    }

    /** Just past where the brackets opened at `start` close (strings skipped), or the text's end. */
    static int bracketEnd(String text, int start) {
        int depth = 0;
        boolean inString = false;
        for (int i = start; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0) {
                    return i + 1;
                }
            }
        }
        return text.length();
    }

    /** The contract: verdict, groundedness_score in [0, 1], critical_fact_count an integer >= 0, claim_checks,
     *  facts_checked, rationale. Extra keys are ignored; nothing is coerced. Null with `problems` filled when invalid. */
    static Model.Reply validate(Map<String, Object> obj, List<String> problems) {
        Model.Verdict verdict = Model.Verdict.of(Values.str(obj.get("verdict")));
        if (verdict == null) {
            problems.add("verdict: " + (obj.containsKey("verdict") ? "not PASS, LOW_CONFID or REJECT" : "missing"));
        }
        Object score = obj.get("groundedness_score");
        boolean number = score instanceof Long || score instanceof Double || score instanceof BigInteger;
        double g = number ? ((Number) score).doubleValue() : Double.NaN;
        if (!number || !(g >= 0.0 && g <= 1.0)) {
            problems.add("groundedness_score: not a number within [0, 1]");
        }
        Object count = obj.get("critical_fact_count");
        boolean integer = (count instanceof Long && (Long) count >= 0) || (count instanceof BigInteger && ((BigInteger) count).signum() >= 0);
        if (!integer) {
            problems.add("critical_fact_count: not an integer >= 0");
        }
        List<Model.Check> checks = checks(obj.get("claim_checks"), problems);
        facts(obj.get("facts_checked"), problems);
        String rationale = Values.str(obj.get("rationale"));
        if (rationale == null) {
            problems.add("rationale: not a string");
        }
        return problems.isEmpty() ? new Model.Reply(verdict, g, count, checks, rationale) : null;
    }

    private static List<Model.Check> checks(Object value, List<String> problems) {
        List<Object> items = Values.list(value);
        List<Model.Check> out = new ArrayList<>();
        if (items == null) {
            problems.add("claim_checks: not a list");
            return out;
        }
        for (int i = 0; i < items.size(); i++) {
            String at = "claim_checks." + i;
            Map<String, Object> check = Values.map(items.get(i));
            if (check == null) {
                problems.add(at + ": not an object");
                continue;
            }
            String id = Values.str(check.get("claim_id"));
            Model.Derivability d = Model.Derivability.of(check.get("verification"));
            Object detail = check.containsKey("detail") ? check.get("detail") : "";
            if (id == null) {
                problems.add(at + ".claim_id: not a string");
            }
            if (d == null) {
                problems.add(at + ".verification: not one of the six derivability classes");
            }
            if (!(detail instanceof String)) {
                problems.add(at + ".detail: not a string");
            }
            List<Model.Ref> refs = refs(check.containsKey("evidence_refs") ? check.get("evidence_refs") : List.of(), at, problems);
            if (id != null && d != null && detail instanceof String && refs != null) {
                out.add(new Model.Check(id, d, (String) detail, refs));
            }
        }
        return out;
    }

    private static List<Model.Ref> refs(Object value, String at, List<String> problems) {
        List<Object> items = Values.list(value);
        if (items == null) {
            problems.add(at + ".evidence_refs: not a list");
            return null;
        }
        List<Model.Ref> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            Map<String, Object> ref = Values.map(items.get(i));
            String where = at + ".evidence_refs." + i;
            if (ref == null) {
                problems.add(where + ": not an object");
                return null;
            }
            Object trace = ref.get("trace_ref");
            Object tool = ref.get("tool_name");
            Object ids = ref.containsKey("source_invocation_ids") ? ref.get("source_invocation_ids") : List.of();
            if ((trace != null && !(trace instanceof String)) || (tool != null && !(tool instanceof String)) || !Values.isStrList(ids)) {
                problems.add(where + ": trace_ref, tool_name or source_invocation_ids mistyped");
                return null;
            }
            List<String> idList = new ArrayList<>();
            Values.list(ids).forEach(x -> idList.add((String) x));
            out.add(new Model.Ref(Values.text(trace), Values.text(tool), idList, true));
        }
        return out;
    }

    private static void facts(Object value, List<String> problems) {
        List<Object> items = Values.list(value);
        if (items == null) {
            problems.add("facts_checked: not a list");
            return;
        }
        for (int i = 0; i < items.size(); i++) {
            Map<String, Object> fact = Values.map(items.get(i));
            if (fact == null) {
                problems.add("facts_checked." + i + ": not an object");
            } else if (fact.get("verification") != null && !Model.LEGACY_CLASSES.contains(fact.get("verification"))) {
                problems.add("facts_checked." + i + ".verification: not one of the four legacy classes");
            }
        }
    }
}
