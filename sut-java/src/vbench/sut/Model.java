package vbench.sut;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The records the system itself produces, with the names of INTERPRETATION §7. */
final class Model {
    private Model() {}

    enum Verdict {
        PASS, LOW_CONFID, REJECT;

        static Verdict of(String name) {
            for (Verdict v : values()) {
                if (v.name().equals(name)) {
                    return v;
                }
            }
            return null;
        }

        /** The more severe of two verdicts (PASS < LOW_CONFID < REJECT). */
        Verdict worst(Verdict other) {
            return other != null && other.ordinal() > ordinal() ? other : this;
        }
    }

    /** The six derivability classes (§4) and the legacy class each maps to (§6). */
    enum Derivability {
        direct_observation("direct_evidence", 0),
        reasonable_inference("indirect_support", 1),
        overstated("indirect_support", 2),
        external_unknown("no_evidence", 3),
        unsupported("no_evidence", 4),
        contradicted("contradicted", 5);

        final String legacy;
        /** Which of two checks of one claim weighs more against it. */
        final int weight;

        Derivability(String legacy, int weight) {
            this.legacy = legacy;
            this.weight = weight;
        }

        static Derivability of(Object name) {
            for (Derivability d : values()) {
                if (d.name().equals(name)) {
                    return d;
                }
            }
            return null;
        }
    }

    static final List<String> LEGACY_CLASSES = List.of("direct_evidence", "indirect_support", "no_evidence", "contradicted");

    /** One tool_invocation row. */
    record Invocation(String id, String toolName, Map<String, Object> arguments, String status, String result) {}

    /** One tool_trace_summary entry. */
    record TraceEntry(String traceRef, String toolName, List<String> ids, String status, String excerpt, boolean truncated) {
        Map<String, Object> json() {
            return Values.obj("trace_ref", traceRef, "tool_name", toolName, "source_invocation_ids", new ArrayList<>(ids),
                    "status", status, "result_excerpt", excerpt, "truncated", truncated);
        }
    }

    /** An evidence pointer: an executor binding or a verifier evidence ref. wellTyped false: never resolves (§3). */
    record Ref(String traceRef, String toolName, List<String> ids, boolean wellTyped) {
        Map<String, Object> json() {
            return Values.obj("trace_ref", traceRef, "tool_name", toolName, "source_invocation_ids", new ArrayList<>(ids));
        }

        boolean complete() {
            return traceRef != null && toolName != null && !ids.isEmpty();
        }
    }

    /** A structured claim as the policy reads it. */
    record Claim(String id, String statement, boolean critical, List<Ref> bindings) {}

    /** A claim check (the model's, or the sanitised one). */
    record Check(String claimId, Derivability verification, String detail, List<Ref> refs) {
        Check with(Derivability v, List<Ref> newRefs) {
            return new Check(claimId, v, detail, newRefs);
        }

        Map<String, Object> json() {
            List<Object> out = new ArrayList<>();
            for (Ref r : refs) {
                out.add(r.json());
            }
            return Values.obj("claim_id", claimId, "verification", verification.name(), "detail", detail, "evidence_refs", out);
        }
    }

    /** One gatekeeper issue. */
    record Issue(String rule, String message, String claimId, String path) {
        Map<String, Object> json() {
            return Values.obj("rule", rule, "message", message, "claim_id", claimId, "path", path);
        }
    }

    /** The verifier model's reply after validation against its contract. */
    record Reply(Verdict verdict, double groundedness, Object criticalFactCount, List<Check> checks, String rationale) {}

    /** One policy step that changed a check or the verdict. */
    record Adjustment(String step, String reason, String claimId, Verdict from, Verdict to) {
        Map<String, Object> json() {
            return Values.obj("step", step, "reason", reason, "claim_id", claimId,
                    "from_verdict", from == null ? null : from.name(), "to_verdict", to == null ? null : to.name());
        }
    }
}
