package vbench.sut;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The ChatService verdict policy (INTERPRETATION §4-§6): parse status, reply validity, sanitising the claim
 * checks, the gatekeeper downgrade, the claim guard. Steps 1 and 2 are final. Every step that changes a check
 * or the verdict is recorded as an adjustment with its reason.
 */
final class Policy {
    private Policy() {}

    static final double PASS_THRESHOLD = 0.5;

    record Outcome(Model.Verdict verdict, Model.Verdict modelVerdict, Model.Verdict derived, List<Model.Check> checks,
                   List<Map<String, Object>> facts, int criticalCount, List<Model.Adjustment> adjustments) {}

    static Outcome apply(Executor.Parsed parsed, List<Model.Claim> claims, Gatekeeper.Result gk, Model.Reply reply,
                         Map<String, Model.Invocation> rows, List<Model.TraceEntry> trace, boolean claimGuard) {
        List<Model.Adjustment> adjustments = new ArrayList<>();
        List<Model.Check> checks = sanitise(reply == null ? List.of() : reply.checks(), claims, gk, rows, trace, adjustments);
        Model.Verdict derived = derive(checks, claims, reply == null ? null : reply.groundedness());
        Model.Verdict model = reply == null ? null : reply.verdict();
        Model.Verdict verdict;
        if (!parsed.valid()) {
            verdict = Model.Verdict.LOW_CONFID;
            if (model != verdict) {
                adjustments.add(new Model.Adjustment("policy.parse_status", "structured output is " + parsed.status()
                        + ": the verdict cannot come from prose", null, model, verdict));
            }
        } else if (reply == null) {
            verdict = Model.Verdict.LOW_CONFID;
            adjustments.add(new Model.Adjustment("policy.invalid_reply", "the verifier reply is not valid JSON of the contract",
                    null, null, verdict));
        } else {
            verdict = model;
            if ("fail".equals(gk.status()) && verdict == Model.Verdict.PASS) {
                Model.Verdict down = gk.failedRules().contains(Gatekeeper.INVOCATION_REF) ? Model.Verdict.REJECT : Model.Verdict.LOW_CONFID;
                adjustments.add(new Model.Adjustment("policy.gatekeeper_fail", "gatekeeper failed "
                        + String.join(", ", gk.failedRules()) + "; PASS is not allowed", null, verdict, down));
                verdict = down;
            }
            if (claimGuard) {
                Model.Verdict guarded = verdict.worst(derived);
                if (guarded != verdict) {
                    adjustments.add(new Model.Adjustment("policy.claim_guard", "the critical claims' classes imply "
                            + derived.name(), null, verdict, guarded));
                }
                verdict = guarded;
            }
        }
        int critical = (int) claims.stream().filter(Model.Claim::critical).count();
        return new Outcome(verdict, model, derived, checks, facts(checks, claims), critical, adjustments);
    }

    /** One check per structured claim, in claim order (§5 step 3); every change recorded. */
    static List<Model.Check> sanitise(List<Model.Check> given, List<Model.Claim> claims, Gatekeeper.Result gk,
                                      Map<String, Model.Invocation> rows, List<Model.TraceEntry> trace,
                                      List<Model.Adjustment> notes) {
        Set<String> known = new HashSet<>();
        claims.forEach(c -> known.add(c.id()));
        Map<String, Model.Check> byId = new LinkedHashMap<>();
        for (Model.Check check : given) {
            Model.Check earlier = byId.get(check.claimId());
            if (!known.contains(check.claimId())) {
                notes.add(new Model.Adjustment("sanitise.unknown_claim", "dropped a check for " + check.claimId()
                        + ", which the executor never claimed", check.claimId(), null, null));
            } else if (earlier != null) {
                Model.Check kept = check.verification().weight > earlier.verification().weight ? check : earlier;
                notes.add(new Model.Adjustment("sanitise.duplicate_check", check.claimId() + " was checked more than once; "
                        + "the class weighing most against it (" + kept.verification().name() + ") is kept", check.claimId(), null, null));
                byId.put(check.claimId(), kept);
            } else {
                byId.put(check.claimId(), check);
            }
        }
        List<Model.Check> out = new ArrayList<>();
        for (Model.Claim claim : claims) {
            Model.Check check = byId.get(claim.id());
            if (check == null) {
                notes.add(new Model.Adjustment("sanitise.missing_check", "no check for this claim: counted as unsupported",
                        claim.id(), null, null));
                check = new Model.Check(claim.id(), Model.Derivability.unsupported, "no claim check returned", List.of());
            } else if (check.verification() == Model.Derivability.direct_observation && !anyResolves(claim, gk, rows, trace)) {
                notes.add(new Model.Adjustment("sanitise.unresolved_direct",
                        "direct_observation without resolving evidence bindings: counted as unsupported", claim.id(), null, null));
                check = check.with(Model.Derivability.unsupported, check.refs());
            }
            out.add(check.with(check.verification(), completeRefs(check.refs(), claim, trace)));
        }
        return out;
    }

    /** Whether any binding of the claim resolves; none does when the claim failed evidence.invocation_ref. */
    static boolean anyResolves(Model.Claim claim, Gatekeeper.Result gk, Map<String, Model.Invocation> rows,
                               List<Model.TraceEntry> trace) {
        if (gk.failedInvocationRef(claim.id())) {
            return false;
        }
        for (Model.Ref b : claim.bindings()) {
            if (resolves(b, rows, trace)) {
                return true;
            }
        }
        return false;
    }

    /** All its ids are current-session rows under its tool; or, with no ids, its trace_ref is in the summary. */
    static boolean resolves(Model.Ref b, Map<String, Model.Invocation> rows, List<Model.TraceEntry> trace) {
        if (!b.wellTyped()) {
            return false;
        }
        if (!b.ids().isEmpty()) {
            if (b.toolName() == null) {
                return false;
            }
            return b.ids().stream().allMatch(id -> Gatekeeper.rowProblem(id, b.toolName(), rows) == null);
        }
        return b.traceRef() != null && trace.stream().anyMatch(e -> e.traceRef().equals(b.traceRef()));
    }

    /** Empty refs come from the claim's bindings; every ref's absent fields are filled from the trace (§7). */
    static List<Model.Ref> completeRefs(List<Model.Ref> refs, Model.Claim claim, List<Model.TraceEntry> trace) {
        List<Model.Ref> source = refs.isEmpty() ? claim.bindings() : refs;
        List<Model.Ref> out = new ArrayList<>();
        for (Model.Ref ref : source) {
            Model.Ref done = Trace.complete(ref, trace);
            if (!done.complete()) {
                for (Model.Ref b : claim.bindings()) {
                    if (sameEvidence(done, b)) {
                        done = Trace.complete(new Model.Ref(done.traceRef() != null ? done.traceRef() : b.traceRef(),
                                done.toolName() != null ? done.toolName() : b.toolName(),
                                !done.ids().isEmpty() ? done.ids() : b.ids(), true), trace);
                        break;
                    }
                }
            }
            out.add(new Model.Ref(done.traceRef(), done.toolName(), done.ids(), true));
        }
        return out;
    }

    private static boolean sameEvidence(Model.Ref ref, Model.Ref binding) {
        if (ref.traceRef() != null && ref.traceRef().equals(binding.traceRef())) {
            return true;
        }
        if (ref.ids().stream().anyMatch(binding.ids()::contains)) {
            return true;
        }
        return ref.traceRef() == null && ref.ids().isEmpty() && ref.toolName() != null && ref.toolName().equals(binding.toolName());
    }

    /** The verdict the critical claims' classes imply (§4). */
    static Model.Verdict derive(List<Model.Check> checks, List<Model.Claim> claims, Double groundedness) {
        Set<String> critical = new HashSet<>();
        claims.stream().filter(Model.Claim::critical).forEach(c -> critical.add(c.id()));
        List<Model.Derivability> classes = new ArrayList<>();
        checks.stream().filter(c -> critical.contains(c.claimId())).forEach(c -> classes.add(c.verification()));
        if (classes.contains(Model.Derivability.contradicted)) {
            return Model.Verdict.REJECT;
        }
        boolean weak = classes.stream().anyMatch(d -> d == Model.Derivability.unsupported
                || d == Model.Derivability.external_unknown || d == Model.Derivability.overstated);
        if (classes.isEmpty() || weak || !classes.contains(Model.Derivability.direct_observation)) {
            return Model.Verdict.LOW_CONFID;
        }
        return groundedness != null && groundedness >= PASS_THRESHOLD ? Model.Verdict.PASS : Model.Verdict.LOW_CONFID;
    }

    /** facts_checked, derived from the sanitised checks, one item per claim (§6). */
    static List<Map<String, Object>> facts(List<Model.Check> checks, List<Model.Claim> claims) {
        Map<String, String> statements = new LinkedHashMap<>();
        claims.forEach(c -> statements.put(c.id(), c.statement()));
        List<Map<String, Object>> out = new ArrayList<>();
        for (Model.Check c : checks) {
            out.add(Values.obj("claim_id", c.claimId(), "fact", statements.getOrDefault(c.claimId(), ""),
                    "verification", c.verification().legacy, "detail", c.detail()));
        }
        return out;
    }
}
