package vbench.sut;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The deterministic gatekeeper (INTERPRETATION §3), run after parsing and before the verifier model.
 * Fail rules: schema.executor_v2, evidence.invocation_ref. Warning rules: schema.unknown_field,
 * evidence.trace_ref, evidence.failed_invocation, claims.no_critical.
 */
final class Gatekeeper {
    static final String SCHEMA = "schema.executor_v2";
    static final String INVOCATION_REF = "evidence.invocation_ref";
    static final String VERSION = "executor_evidence_v2";
    static final List<String> REMOVED = List.of("diagnosis_summary", "user_facing_answer");
    static final Set<String> TOP = Set.of("schema_version", "claims", "open_questions", "next_steps");
    static final Set<String> CLAIM_FIELDS = Set.of("claim_id", "statement", "status", "critical", "evidence_bindings");
    static final Set<String> BINDING_FIELDS = Set.of("trace_ref", "tool_name", "source_invocation_ids");

    /** gatekeeper_result. */
    record Result(String status, List<String> failedRules, List<Model.Issue> errors, List<Model.Issue> warnings) {
        Map<String, Object> json() {
            List<Object> e = new ArrayList<>();
            errors.forEach(i -> e.add(i.json()));
            List<Object> w = new ArrayList<>();
            warnings.forEach(i -> w.add(i.json()));
            return Values.obj("status", status, "failed_rules", new ArrayList<>(failedRules), "errors", e, "warnings", w);
        }

        boolean failedInvocationRef(String claimId) {
            return errors.stream().anyMatch(i -> INVOCATION_REF.equals(i.rule()) && claimId.equals(i.claimId()));
        }
    }

    private final Executor.Parsed parsed;
    private final Map<String, Model.Invocation> rows;
    private final List<Model.TraceEntry> trace;
    private final List<Model.Issue> errors = new ArrayList<>();
    private final List<Model.Issue> warnings = new ArrayList<>();

    private Gatekeeper(Executor.Parsed parsed, Map<String, Model.Invocation> rows, List<Model.TraceEntry> trace) {
        this.parsed = parsed;
        this.rows = rows;
        this.trace = trace;
    }

    static Result run(Executor.Parsed parsed, Map<String, Model.Invocation> rows, List<Model.TraceEntry> trace) {
        Gatekeeper gk = new Gatekeeper(parsed, rows, trace);
        gk.schema();
        gk.invocationRefs();
        gk.unknownFields();
        gk.traceRefs();
        gk.failedInvocations();
        gk.noCritical();
        TreeSet<String> failed = new TreeSet<>();
        gk.errors.forEach(i -> failed.add(i.rule()));
        String status = !gk.errors.isEmpty() ? "fail" : !gk.warnings.isEmpty() ? "warn" : "pass";
        return new Result(status, new ArrayList<>(failed), gk.errors, gk.warnings);
    }

    /** Why a cited id does not resolve: not a row of this session, or a row of another tool; null when it does. */
    static String rowProblem(String id, String toolName, Map<String, Model.Invocation> rows) {
        Model.Invocation row = rows.get(id);
        if (row == null) {
            return id + " is not an invocation of this session";
        }
        if (toolName != null && !toolName.equals(row.toolName())) {
            return id + " was a " + row.toolName() + " call, the binding says " + toolName;
        }
        return null;
    }

    private void error(String message, Object claimId, String path) {
        errors.add(new Model.Issue(SCHEMA, message, Values.str(claimId), path));
    }

    private void schema() {
        if (!parsed.valid()) {
            error("structured output is " + parsed.status() + ": " + parsed.reason(), null, null);
            return;
        }
        Map<String, Object> doc = parsed.structured();
        if (!VERSION.equals(doc.get("schema_version"))) {
            error("schema_version is " + doc.get("schema_version") + ", not " + VERSION, null, "schema_version");
        }
        for (String removed : REMOVED) {
            if (doc.containsKey(removed)) {
                error("removed V1 field " + removed + " is present", null, removed);
            }
        }
        for (String key : List.of("open_questions", "next_steps")) {
            if (doc.containsKey(key) && !Values.isStrList(doc.get(key))) {
                error(key + " must be a list of strings", null, key);
            }
        }
        Set<String> seen = new HashSet<>();
        List<Object> claims = Values.list(doc.get("claims"));
        for (int i = 0; i < claims.size(); i++) {
            String path = "claims[" + i + "]";
            Map<String, Object> claim = Values.map(claims.get(i));
            if (claim == null) {
                error("claim is not an object", null, path);
                continue;
            }
            claim(claim, path);
            String id = Values.str(claim.get("claim_id"));
            if (id != null && !seen.add(id)) {
                error("claim_id " + id + " repeats", id, path + ".claim_id");
            }
        }
    }

    private void claim(Map<String, Object> claim, String path) {
        Object cid = claim.get("claim_id");
        if (Values.text(cid) == null) {
            error("claim_id is missing or not a non-empty string", null, path + ".claim_id");
        }
        if (!(claim.get("statement") instanceof String)) {
            error("statement is missing or not a string", cid, path + ".statement");
        }
        Object status = claim.get("status");
        if (!"confirmed".equals(status) && !"hypothesis".equals(status)) {
            error("status must be confirmed or hypothesis", cid, path + ".status");
        }
        if (!(claim.get("critical") instanceof Boolean)) {
            error("critical is missing or not a boolean", cid, path + ".critical");
        }
        Object value = claim.containsKey("evidence_bindings") ? claim.get("evidence_bindings") : List.of();
        List<Object> bindings = Values.list(value);
        if (bindings == null) {
            error("evidence_bindings is not a list", cid, path + ".evidence_bindings");
            return;
        }
        if ("confirmed".equals(status) && bindings.isEmpty()) {
            error("confirmed claim has no evidence bindings", cid, path + ".evidence_bindings");
        }
        for (int i = 0; i < bindings.size(); i++) {
            binding(bindings.get(i), cid, path + ".evidence_bindings[" + i + "]");
        }
    }

    private void binding(Object value, Object cid, String path) {
        Map<String, Object> b = Values.map(value);
        if (b == null) {
            error("evidence binding is not an object", cid, path);
            return;
        }
        if (Values.text(b.get("tool_name")) == null) {
            error("binding lacks tool_name", cid, path + ".tool_name");
        }
        Object traceRef = b.get("trace_ref");
        if (traceRef != null && !(traceRef instanceof String)) {
            error("trace_ref is not a string", cid, path + ".trace_ref");
        }
        Object ids = b.get("source_invocation_ids");
        if (ids != null && !Values.isStrList(ids)) {
            error("source_invocation_ids is not a list of strings", cid, path + ".source_invocation_ids");
        }
        List<Object> idList = Values.list(ids);
        if (Values.text(traceRef) == null && (idList == null || idList.isEmpty())) {
            error("binding has neither trace_ref nor source_invocation_ids", cid, path);
        }
    }

    /** Every binding object of every claim object, with its path. */
    private void eachBinding(BindingVisitor visitor) {
        for (Map.Entry<Integer, Map<String, Object>> entry : Executor.claimObjects(parsed)) {
            for (Executor.RawBinding b : Executor.bindings(entry.getValue())) {
                visitor.visit("claims[" + entry.getKey() + "].evidence_bindings" + b.suffix(), entry.getValue(), b.binding());
            }
        }
    }

    private interface BindingVisitor {
        void visit(String path, Map<String, Object> claim, Map<String, Object> binding);
    }

    private void invocationRefs() {
        eachBinding((path, claim, binding) -> {
            String tool = Values.str(binding.get("tool_name"));
            for (String id : Executor.invocationIds(binding)) {
                Model.Invocation row = rows.get(id);
                String problem = rowProblem(id, tool, rows);
                if (problem != null) {
                    String field = row == null ? "source_invocation_ids" : "tool_name";
                    errors.add(new Model.Issue(INVOCATION_REF, problem, Values.str(claim.get("claim_id")), path + "." + field));
                }
            }
        });
    }

    private void warn(String rule, String message, Object claimId, String path) {
        warnings.add(new Model.Issue(rule, message, Values.str(claimId), path));
    }

    private void unknownFields() {
        if (parsed.structured() == null) {
            return;
        }
        for (String key : parsed.structured().keySet()) {
            if (!TOP.contains(key) && !REMOVED.contains(key)) {
                warn("schema.unknown_field", "unknown field " + key, null, key);
            }
        }
        for (Map.Entry<Integer, Map<String, Object>> entry : Executor.claimObjects(parsed)) {
            for (String key : entry.getValue().keySet()) {
                if (!CLAIM_FIELDS.contains(key)) {
                    warn("schema.unknown_field", "unknown claim field " + key, entry.getValue().get("claim_id"),
                            "claims[" + entry.getKey() + "]." + key);
                }
            }
        }
        eachBinding((path, claim, binding) -> {
            for (String key : binding.keySet()) {
                if (!BINDING_FIELDS.contains(key)) {
                    warn("schema.unknown_field", "unknown binding field " + key, claim.get("claim_id"), path + "." + key);
                }
            }
        });
    }

    private void traceRefs() {
        Set<String> known = new HashSet<>();
        trace.forEach(e -> known.add(e.traceRef()));
        eachBinding((path, claim, binding) -> {
            String ref = Values.text(binding.get("trace_ref"));
            if (ref != null && !known.contains(ref)) {
                warn("evidence.trace_ref", "trace_ref " + ref + " is not in the trace summary", claim.get("claim_id"),
                        path + ".trace_ref");
            }
        });
    }

    private void failedInvocations() {
        eachBinding((path, claim, binding) -> {
            for (String id : Executor.invocationIds(binding)) {
                Model.Invocation row = rows.get(id);
                if (row != null && "error".equals(row.status())) {
                    warn("evidence.failed_invocation", id + " ended in error", claim.get("claim_id"),
                            path + ".source_invocation_ids");
                }
            }
        });
    }

    private void noCritical() {
        if (parsed.structured() == null) {
            return;
        }
        for (Map.Entry<Integer, Map<String, Object>> entry : Executor.claimObjects(parsed)) {
            if (Boolean.TRUE.equals(entry.getValue().get("critical"))) {
                return;
            }
        }
        warn("claims.no_critical", "no claim is marked critical; PASS is impossible", null, null);
    }
}
