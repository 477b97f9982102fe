"""The ChatService verdict policy (INTERPRETATION §4–§6), as pure functions.

Order: parse status → reply validity → sanitise claim checks → gatekeeper
downgrade → claim guard. Steps 1 and 2 are final. Every step that changes a
verdict or a claim check is recorded as an `Adjustment` with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product

from harness.system.gatekeeper import INVOCATION_REF, cited_row_problem
from harness.system.models import (
    LEGACY_MAPPING,
    Adjustment,
    AdjustmentStep,
    Claim,
    ClaimCheck,
    Derivability,
    EvidenceBinding,
    EvidenceRef,
    FactChecked,
    GatekeeperResult,
    GatekeeperStatus,
    ParsedExecutorOutput,
    PolicySettings,
    ToolInvocation,
    TraceEntry,
    Verdict,
    VerifierReply,
    most_severe,
)
from harness.system.parser import executor_output
from harness.system.trace import complete_ref

NOT_DIRECT = frozenset({Derivability.UNSUPPORTED, Derivability.EXTERNAL_UNKNOWN, Derivability.OVERSTATED})
PASS_THRESHOLD = 0.5
CHECK_SEVERITY: dict[Derivability, int] = {
    Derivability.DIRECT_OBSERVATION: 0,
    Derivability.REASONABLE_INFERENCE: 1,
    Derivability.OVERSTATED: 2,
    Derivability.EXTERNAL_UNKNOWN: 3,
    Derivability.UNSUPPORTED: 4,
    Derivability.CONTRADICTED: 5,
}
"""Which of two checks of one claim is kept: the one that weighs more against the claim (ties: the first)."""


@dataclass(frozen=True)
class PolicyOutcome:
    verdict: Verdict
    model_verdict: Verdict | None
    derived_verdict: Verdict
    claim_checks: list[ClaimCheck]
    facts_checked: list[FactChecked]
    critical_fact_count: int
    adjustments: list[Adjustment]


# --- claims as the policy reads them -----------------------------------------------


def structured_claims(parsed: ParsedExecutorOutput) -> list[Claim]:
    """The executor's claims with a usable claim_id, first occurrence of each id (`ExecutorOutput.claims`)."""
    return executor_output(parsed).claims


# --- binding resolution -------------------------------------------------------------


def binding_resolves(
    binding: EvidenceBinding, invocations: Mapping[str, ToolInvocation], trace: Sequence[TraceEntry]
) -> bool:
    """All its ids are current-session rows under its tool; or, with no ids, its trace_ref exists.

    A binding given in a mistyped form never resolves (§3).
    """
    if not binding.well_typed:
        return False
    if binding.source_invocation_ids:
        return binding.tool_name is not None and not any(
            cited_row_problem(inv_id, binding.tool_name, invocations) for inv_id in binding.source_invocation_ids
        )
    return binding.trace_ref is not None and any(e.trace_ref == binding.trace_ref for e in trace)


def resolving_bindings(
    claim: Claim, gatekeeper: GatekeeperResult, invocations: Mapping[str, ToolInvocation], trace: Sequence[TraceEntry]
) -> list[EvidenceBinding]:
    """The claim's bindings that resolve, in order; none when the claim failed `evidence.invocation_ref` (§5 step 3)."""
    if claim_fails_invocation_ref(claim, gatekeeper):
        return []
    return [b for b in claim.evidence_bindings if binding_resolves(b, invocations, trace)]


def claim_fails_invocation_ref(claim: Claim, gatekeeper: GatekeeperResult) -> bool:
    return any(e.rule == INVOCATION_REF and e.claim_id == claim.claim_id for e in gatekeeper.errors)


def trace_rows(trace: Sequence[TraceEntry]) -> dict[str, ToolInvocation]:
    """The session's invocation rows as the trace summary lists them (one entry per current-session invocation)."""
    return {
        inv_id: ToolInvocation(id=inv_id, tool_name=entry.tool_name, status=entry.status)
        for entry in trace
        for inv_id in entry.source_invocation_ids
        if inv_id
    }


def resolving_entries(claim: Claim, gatekeeper: GatekeeperResult, trace: Sequence[TraceEntry]) -> list[TraceEntry]:
    """The trace entries the claim's resolving bindings point at, in binding order (§5 step 3).

    For a reader that sees only the verifier inputs (the trace summary stands in for the session's rows):
    none when the claim failed `evidence.invocation_ref`, and a binding that does not resolve adds nothing.
    """
    found: list[TraceEntry] = []
    for binding in resolving_bindings(claim, gatekeeper, trace_rows(trace), trace):
        ids = set(binding.source_invocation_ids)
        for entry in trace:
            hit = ids & set(entry.source_invocation_ids) if ids else entry.trace_ref == binding.trace_ref
            if hit and entry not in found:
                found.append(entry)
    return found


def usable_evidence(entries: Sequence[TraceEntry]) -> list[TraceEntry]:
    """The entries whose call succeeded: a call that ended in error shows nothing a claim can rest on."""
    return [e for e in entries if e.status == "success"]


# --- sanitising ---------------------------------------------------------------------


def sanitise_claim_checks(
    checks: Sequence[ClaimCheck],
    claims: Sequence[Claim],
    gatekeeper: GatekeeperResult,
    invocations: Mapping[str, ToolInvocation],
    trace: Sequence[TraceEntry],
) -> tuple[list[ClaimCheck], list[Adjustment]]:
    """One check per structured claim, in claim order, per INTERPRETATION §5 step 3."""
    notes: list[Adjustment] = []
    known = {c.claim_id for c in claims}
    by_id: dict[str, ClaimCheck] = {}
    for check in checks:
        if check.claim_id not in known:
            notes.append(
                _note(
                    AdjustmentStep.UNKNOWN_CLAIM,
                    f"dropped a check for {check.claim_id}, which the executor never claimed",
                    check.claim_id,
                )
            )
        elif check.claim_id in by_id:
            kept = max(by_id[check.claim_id], check, key=lambda c: CHECK_SEVERITY[c.verification])
            notes.append(
                _note(
                    AdjustmentStep.DUPLICATE_CHECK,
                    f"{check.claim_id} was checked more than once; the most severe class ({kept.verification.value}) is kept",
                    check.claim_id,
                )
            )
            by_id[check.claim_id] = kept
        else:
            by_id[check.claim_id] = check
    result: list[ClaimCheck] = []
    for claim in claims:
        found = by_id.get(claim.claim_id)
        if found is None:
            notes.append(
                _note(AdjustmentStep.MISSING_CHECK, "no check for this claim: counted as unsupported", claim.claim_id)
            )
            check = ClaimCheck(
                claim_id=claim.claim_id, verification=Derivability.UNSUPPORTED, detail="no claim check returned"
            )
        elif found.verification == Derivability.DIRECT_OBSERVATION and not resolving_bindings(
            claim, gatekeeper, invocations, trace
        ):
            notes.append(
                _note(
                    AdjustmentStep.UNRESOLVED_DIRECT,
                    "direct_observation without resolving evidence bindings: counted as unsupported",
                    claim.claim_id,
                )
            )
            check = found.model_copy(update={"verification": Derivability.UNSUPPORTED})
        else:
            check = found
        result.append(check.model_copy(update={"evidence_refs": complete_refs(check.evidence_refs, claim, trace)}))
    return result, notes


def complete_refs(refs: Sequence[EvidenceRef], claim: Claim, trace: Sequence[TraceEntry]) -> list[EvidenceRef]:
    """Empty refs come from the claim's bindings; partial ones are filled (§7)."""
    if not refs:
        refs = [EvidenceRef.model_validate(b.model_dump()) for b in claim.evidence_bindings]
    return [_complete_one(ref, claim, trace) for ref in refs]


def _complete_one(ref: EvidenceRef, claim: Claim, trace: Sequence[TraceEntry]) -> EvidenceRef:
    ref = complete_ref(ref, trace)
    if ref.trace_ref and ref.tool_name and ref.source_invocation_ids:
        return ref
    for binding in claim.evidence_bindings:
        if _same_evidence(ref, binding):
            ref = EvidenceRef(
                trace_ref=ref.trace_ref or binding.trace_ref,
                tool_name=ref.tool_name or binding.tool_name,
                source_invocation_ids=ref.source_invocation_ids or list(binding.source_invocation_ids),
            )
            return complete_ref(ref, trace)
    return ref


def _same_evidence(ref: EvidenceRef, binding: EvidenceBinding) -> bool:
    if ref.trace_ref and ref.trace_ref == binding.trace_ref:
        return True
    if set(ref.source_invocation_ids) & set(binding.source_invocation_ids):
        return True
    return not ref.trace_ref and not ref.source_invocation_ids and ref.tool_name == binding.tool_name


# --- verdicts -----------------------------------------------------------------------


def derive_verdict(checks: Sequence[ClaimCheck], claims: Sequence[Claim], groundedness: float | None) -> Verdict:
    """The verdict the critical claims' classes imply (INTERPRETATION §4)."""
    critical_ids = {c.claim_id for c in claims if c.critical}
    classes = [c.verification for c in checks if c.claim_id in critical_ids]
    if Derivability.CONTRADICTED in classes:
        return Verdict.REJECT
    if not classes or NOT_DIRECT.intersection(classes) or Derivability.DIRECT_OBSERVATION not in classes:
        return Verdict.LOW_CONFID
    return Verdict.PASS if (groundedness or 0.0) >= PASS_THRESHOLD else Verdict.LOW_CONFID


def legacy_facts(checks: Sequence[ClaimCheck], claims: Sequence[Claim]) -> list[FactChecked]:
    """`facts_checked`, derived by the system from the sanitised checks (§6)."""
    statements = {c.claim_id: c.statement for c in claims}
    return [
        FactChecked(
            claim_id=check.claim_id,
            fact=statements.get(check.claim_id, ""),
            verification=LEGACY_MAPPING[check.verification],
            detail=check.detail,
        )
        for check in checks
    ]


def gatekeeper_downgrade(verdict: Verdict, gatekeeper_status: str, failed_rules: Sequence[str]) -> Verdict:
    """Policy step 4: a gatekeeper fail turns a PASS into REJECT (with evidence.invocation_ref) or LOW_CONFID."""
    if gatekeeper_status != "fail" or verdict != Verdict.PASS:
        return verdict
    return Verdict.REJECT if INVOCATION_REF in failed_rules else Verdict.LOW_CONFID


def verdicts_after_gatekeeper(
    verdict: Verdict,
    gatekeeper_status: GatekeeperStatus,
    failed_rules: Sequence[str],
    *,
    either_on_invocation_ref: bool,
) -> set[Verdict]:
    """The effective verdicts a correct verifier, whose claims imply `verdict`, ends at after step 4.

    It says `verdict` and the downgrade applies. With `either_on_invocation_ref`, a failed
    `evidence.invocation_ref` leaves it free to hedge or to reject: a verifier that sees the broken
    citation says LOW_CONFID, one that does not says PASS and is downgraded to REJECT; so any verdict
    short of REJECT may end at LOW_CONFID or REJECT (the mutation generator's labels, whose citation
    mutations judge the claim without the citation).
    """
    downgraded = gatekeeper_downgrade(verdict, gatekeeper_status, failed_rules)
    if either_on_invocation_ref and gatekeeper_status == "fail" and INVOCATION_REF in failed_rules:
        return {downgraded} if verdict == Verdict.REJECT else {Verdict.LOW_CONFID, Verdict.REJECT}
    return {downgraded}


def verdicts_implied_by_labels(
    labels: Mapping[str, Iterable[Derivability]], claims: Sequence[Claim], *, every_critical_labelled: bool
) -> set[Verdict] | None:
    """The derived verdicts (§4) a verifier reaches when each claim's class is one of its acceptable labels.

    Every combination of the labelled critical claims' labels is tried (the sets are small), with a
    groundedness that never holds PASS back. None, with `every_critical_labelled`, when a critical claim
    has no label (its class, so the verdict, is open); without it an unlabelled critical claim is left out.
    """
    critical = [c.claim_id for c in claims if c.critical]
    if every_critical_labelled and any(cid not in labels for cid in critical):
        return None
    ids = [cid for cid in critical if cid in labels]
    out: set[Verdict] = set()
    for combo in product(*(sorted(labels[cid]) for cid in ids)):
        checks = [ClaimCheck(claim_id=cid, verification=v) for cid, v in zip(ids, combo, strict=True)]
        out.add(derive_verdict(checks, claims, 1.0))
    return out


def apply_policy(
    parsed: ParsedExecutorOutput,
    gatekeeper: GatekeeperResult,
    reply: VerifierReply | None,
    invocations: Mapping[str, ToolInvocation],
    trace: Sequence[TraceEntry],
    settings: PolicySettings = PolicySettings(),
    *,
    claims: Sequence[Claim] | None = None,
) -> PolicyOutcome:
    """The effective verdict and the sanitised, persisted claim checks; `claims`: `structured_claims(parsed)`,
    when the caller has read them already (the pipeline does, once per case run)."""
    claims = structured_claims(parsed) if claims is None else claims
    model_verdict = reply.verdict if reply is not None else None
    checks, adjustments = sanitise_claim_checks(
        reply.claim_checks if reply else [], claims, gatekeeper, invocations, trace
    )
    derived = derive_verdict(checks, claims, reply.groundedness_score if reply else None)

    if parsed.parse_status.status != "valid":
        verdict = Verdict.LOW_CONFID
        if model_verdict != verdict:
            reason = f"structured output is {parsed.parse_status.status}: the verdict cannot come from prose"
            adjustments.append(_change(AdjustmentStep.PARSE_STATUS, reason, model_verdict, verdict))
    elif reply is None:
        verdict = Verdict.LOW_CONFID
        adjustments.append(
            _change(AdjustmentStep.INVALID_REPLY, "the verifier reply is not valid JSON of the contract", None, verdict)
        )
    else:
        verdict = reply.verdict
        downgraded = gatekeeper_downgrade(verdict, gatekeeper.status, gatekeeper.failed_rules)
        if downgraded != verdict:
            adjustments.append(
                _change(
                    AdjustmentStep.GATEKEEPER_FAIL,
                    f"gatekeeper failed {', '.join(gatekeeper.failed_rules)}; PASS is not allowed",
                    verdict,
                    downgraded,
                )
            )
            verdict = downgraded
        if settings.claim_guard:
            guarded = most_severe(verdict, derived)
            if guarded != verdict:
                adjustments.append(
                    _change(
                        AdjustmentStep.CLAIM_GUARD,
                        f"the critical claims' classes imply {derived.value}",
                        verdict,
                        guarded,
                    )
                )
            verdict = guarded

    return PolicyOutcome(
        verdict=verdict,
        model_verdict=model_verdict,
        derived_verdict=derived,
        claim_checks=checks,
        facts_checked=legacy_facts(checks, claims),
        critical_fact_count=sum(1 for c in claims if c.critical),
        adjustments=adjustments,
    )


def _note(step: AdjustmentStep, reason: str, claim_id: str) -> Adjustment:
    return Adjustment(step=step, reason=reason, claim_id=claim_id)


def _change(step: AdjustmentStep, reason: str, before: Verdict | None, after: Verdict) -> Adjustment:
    return Adjustment(step=step, reason=reason, from_verdict=before, to_verdict=after)
