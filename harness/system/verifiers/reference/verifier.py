"""`ReferenceVerifier`: the offline, deterministic, non-LLM baseline verifier.

A heuristic baseline, not a language model: it classifies each structured claim
from the evidence its bindings cite (identifiers, numbers with units, times,
negation, hedges, scope and causal wording, topics no tool observes) and emits
the same JSON reply contract a model must. It reads only the `VerifierInput`
(never a case file, never expected labels) and never takes facts from the
executor's prose answer.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence

from harness.system.gatekeeper import INVOCATION_REF
from harness.system.models import (
    LEGACY_MAPPING,
    Claim,
    ClaimCheck,
    Derivability,
    GatekeeperResult,
    LegacyFact,
    ParsedExecutorOutput,
    Verdict,
    VerifierCall,
    VerifierInput,
    VerifierReply,
)
from harness.system.policy import derive_verdict, structured_claims
from harness.system.verifiers.reference.classify import ReferenceSettings, classify
from harness.system.verifiers.reference.evidence import EntryView, claim_evidence
from harness.system.verifiers.reference.match import APPROX_TOLERANCE, REL_TOLERANCE

VERSION = "1.0"
GROUNDED = frozenset({Derivability.DIRECT_OBSERVATION, Derivability.REASONABLE_INFERENCE})


def check_claims(inputs: VerifierInput, settings: ReferenceSettings) -> tuple[list[Claim], list[ClaimCheck]]:
    """One check per structured claim, in claim order."""
    parsed = ParsedExecutorOutput(
        parse_status=inputs.executor_output_parse_status, structured=inputs.executor_structured_output
    )
    claims = structured_claims(parsed)
    trace = inputs.tool_trace_summary
    session = [(e.tool_name, e.result_excerpt) for e in trace if e.status == "success"]
    views: dict[str, EntryView] = {}
    checks = []
    for claim in claims:
        evidence = claim_evidence(claim, trace, views, inputs.gatekeeper_result)
        decision = classify(claim, evidence, session, settings)
        checks.append(
            ClaimCheck(
                claim_id=claim.claim_id,
                verification=decision.verification,
                detail=decision.detail,
                evidence_refs=list(evidence.refs),
            )
        )
    return claims, checks


def groundedness(checks: Sequence[ClaimCheck]) -> float:
    """Share of claims that are direct observations or reasonable inferences."""
    return sum(c.verification in GROUNDED for c in checks) / len(checks) if checks else 0.0


def reply_verdict(checks: Sequence[ClaimCheck], claims: Sequence[Claim], gatekeeper: GatekeeperResult) -> Verdict:
    """The §4 verdict over critical claims; a failed gatekeeper never lets it PASS."""
    verdict = derive_verdict(checks, claims, groundedness(checks))
    if verdict == Verdict.PASS and gatekeeper.status == "fail":
        return Verdict.REJECT if INVOCATION_REF in gatekeeper.failed_rules else Verdict.LOW_CONFID
    return verdict


def build_reply(inputs: VerifierInput, settings: ReferenceSettings = ReferenceSettings()) -> VerifierReply:
    """The full reply contract for the explicit verification inputs."""
    status = inputs.executor_output_parse_status.status
    if status != "valid":
        return VerifierReply(
            verdict=Verdict.LOW_CONFID,
            groundedness_score=0.0,
            critical_fact_count=0,
            claim_checks=[],
            facts_checked=[],
            rationale=f"Heuristic reference baseline: the structured output is {status}, so no claim can be checked.",
        )
    claims, checks = check_claims(inputs, settings)
    statements = {c.claim_id: c.statement for c in claims}
    verdict = reply_verdict(checks, claims, inputs.gatekeeper_result)
    return VerifierReply(
        verdict=verdict,
        groundedness_score=round(groundedness(checks), 4),
        critical_fact_count=sum(1 for c in claims if c.critical),
        claim_checks=checks,
        facts_checked=[
            LegacyFact.model_validate(
                {
                    "claim_id": c.claim_id,
                    "fact": statements[c.claim_id],
                    "verification": LEGACY_MAPPING[c.verification],
                    "detail": c.detail,
                }
            )
            for c in checks
        ],
        rationale=rationale(checks, claims, verdict, inputs.gatekeeper_result),
    )


def rationale(
    checks: Sequence[ClaimCheck], claims: Sequence[Claim], verdict: Verdict, gatekeeper: GatekeeperResult
) -> str:
    counts = Counter(c.verification.value for c in checks)
    critical = {c.claim_id for c in claims if c.critical}
    crit = ", ".join(f"{c.claim_id}={c.verification.value}" for c in checks if c.claim_id in critical) or "none"
    parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no claims"
    gate = f"; gatekeeper {gatekeeper.status}" + (
        f" ({', '.join(gatekeeper.failed_rules)})" if gatekeeper.failed_rules else ""
    )
    return (
        f"Heuristic reference baseline (no language model): {parts}; critical: {crit}{gate}; verdict {verdict.value}."
    )


class ReferenceVerifier:
    """The default model `reference`: a deterministic heuristic baseline that any LLM should beat."""

    name = "reference"

    def __init__(self, settings: ReferenceSettings | None = None) -> None:
        self.settings = settings or ReferenceSettings()

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        started = time.perf_counter()
        reply = build_reply(inputs, self.settings)
        raw = json.dumps(reply.model_dump(mode="json"), ensure_ascii=False)
        return VerifierCall(
            raw_reply=raw,
            model=self.name,
            prompt_name=None,
            finish_reason="stop",
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": "heuristic baseline (no language model)",
            "version": VERSION,
            "numeric_rel_tolerance": REL_TOLERANCE,
            "approx_tolerance": APPROX_TOLERANCE,
            **self.settings.model_dump(),
        }
