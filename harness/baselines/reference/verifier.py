"""`ReferenceVerifier`: the offline, deterministic, non-LLM baseline every model is compared with.

It reads only the `VerifierInput` (never a case file, never gold labels, never the executor's prose),
classifies each structured claim with the named signals, and replies with its own verdict. The
system's policy then treats that reply as it treats any model's: sanitising, the gatekeeper downgrade
and the claim guard are the policy's, not the baseline's.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.baselines.reference.signals import SIGNALS, Reading, coverage, cue, cue_stems
from harness.baselines.reference.text import (
    content_stems,
    lexicon,
    normalise,
    numbers,
    stem_set,
)
from harness.system.models import (
    Claim,
    ClaimCheck,
    Derivability,
    LegacyFact,
    ParsedExecutorOutput,
    TraceEntry,
    Verdict,
    VerifierCall,
    VerifierInput,
    VerifierReply,
)
from harness.system.policy import complete_refs, legacy_facts, resolving_entries, structured_claims, usable_evidence
from harness.system.verifiers.base import VerifierBase

VERSION = "2.0.0"
"""Semantic version: bump the major for a change of signals or lexicon that moves any figure, the minor for a
new signal that is off by default, the patch for a change that moves no label."""
D = Derivability
GROUNDED = frozenset({D.DIRECT_OBSERVATION, D.REASONABLE_INFERENCE})


class ReferenceSettings(BaseModel):
    """Which signals run and the coverage thresholds; recorded by `describe()` so a result names what made it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    signals: tuple[str, ...] = Field(default_factory=lambda: tuple(SIGNALS))
    direct_coverage: float = 0.5
    inference_coverage: float = 0.25
    hedged_coverage: float = 0.15
    count_max: int = 12
    """Integers up to this are counts a reader derives from rows (2 of 5 pods), not figures to find."""
    near_miss: float = 0.1
    """A missing figure within this relative distance of a shown one is a slip of it (contradicted)."""
    cause_shown: float = 0.75
    """`because <clause>` is no overstatement when the evidence states this share of the clause."""
    short_claim: int = 4
    """A claim of at most this many counted words is direct only when every one is stated (one word is its point)."""

    @field_validator("signals")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(SIGNALS))
        if unknown:
            raise ValueError(f"unknown signal(s) {unknown}; known: {sorted(SIGNALS)}")
        return value

    def without(self, signal_id: str) -> ReferenceSettings:
        return self.model_copy(update={"signals": tuple(s for s in self.signals if s != signal_id)})


def read(claim: Claim, cited: Sequence[TraceEntry], inputs: VerifierInput, s: ReferenceSettings) -> Reading:
    """What the signals read: the claim's words, the cited evidence (instructions dropped) and the session."""
    evidence = "\n".join(e.result_excerpt for e in cited)
    question = frozenset(content_stems(inputs.question)) if "novel_words" in s.signals else frozenset()
    hedge = cue("hedge", claim.statement)
    words = content_stems(claim.statement, cue_stems())
    novel = [w for w in words if w not in question]
    return Reading(
        statement=claim.statement,
        tentative=bool(hedge) or claim.status == "hypothesis",
        hedge=hedge,
        question_stems=question,
        evidence=normalise(evidence),
        evidence_stems=stem_set(evidence),
        evidence_numbers=tuple(v for v, _, _ in numbers(normalise(evidence))),
        tools=tuple(e.tool_name for e in inputs.tool_trace_summary),
        session=normalise("\n".join(e.result_excerpt for e in usable_evidence(inputs.tool_trace_summary))),
        words=tuple(novel or words),
        truncated=any(e.truncated for e in cited),
        settings=s,
    )


def classify(claim: Claim, inputs: VerifierInput, s: ReferenceSettings) -> tuple[Derivability, str]:
    """One claim's class and a detail naming the signal that decided (`reference/<signal id>: reason`)."""
    if not claim.statement.strip():
        return D.UNSUPPORTED, "reference/no_evidence: the claim has no statement"
    cited = resolving_entries(claim, inputs.gatekeeper_result, inputs.tool_trace_summary)
    usable = usable_evidence(cited)
    r = read(claim, usable, inputs, s)
    for sig in SIGNALS.values():
        if sig.id not in s.signals or sig.check is None or (sig.needs_evidence and not usable):
            continue
        outcome = sig.check(r)
        if outcome:
            return outcome[0], f"reference/{sig.id}: {outcome[1]}"
    if not usable:
        why = "its cited calls ended in error" if cited else "none of its bindings resolves"
        return D.UNSUPPORTED, f"reference/no_evidence: {why}"
    share, missing = coverage(r)
    where = "+".join(e.trace_ref for e in usable)
    stated = f"{where} states {round(share * len(r.words))} of its {len(r.words)} content words"
    anchors_missing = [w for w in missing if any(ch.isdigit() for ch in w)]  # a figure or id is the claim's point
    if share >= (1.0 if len(r.words) <= s.short_claim else s.direct_coverage) and not anchors_missing:
        return D.DIRECT_OBSERVATION, f"reference/coverage: {stated}"
    lacking = f"; not stated: {', '.join(missing[:4])}"
    if share >= s.inference_coverage:
        return D.REASONABLE_INFERENCE, f"reference/coverage: {stated}{lacking}"
    return D.UNSUPPORTED, f"reference/coverage: {stated}{lacking}"


def own_verdict(checks: Sequence[ClaimCheck], claims: Sequence[Claim]) -> Verdict:
    """The baseline's verdict: REJECT on a contradicted critical claim, PASS when every critical claim is grounded.

    Deliberately its own simple rule, not the policy's derived verdict, so the claim guard's effect on it shows.
    """
    critical = {c.claim_id for c in claims if c.critical}
    classes = [c.verification for c in checks if c.claim_id in critical]
    if D.CONTRADICTED in classes:
        return Verdict.REJECT
    return Verdict.PASS if classes and all(c in GROUNDED for c in classes) else Verdict.LOW_CONFID


def build_reply(inputs: VerifierInput, settings: ReferenceSettings | None = None) -> VerifierReply:
    """The full reply contract for the explicit verification inputs."""
    s = settings or ReferenceSettings()
    claims = inputs.executor_claims  # read once per case run by the pipeline that built the inputs
    if claims is None:
        parsed = ParsedExecutorOutput(
            parse_status=inputs.executor_output_parse_status, structured=inputs.executor_structured_output
        )
        claims = structured_claims(parsed)
    checks = []
    for claim in claims:
        verification, detail = classify(claim, inputs, s)
        refs = complete_refs([], claim, inputs.tool_trace_summary)
        checks.append(ClaimCheck(claim_id=claim.claim_id, verification=verification, detail=detail, evidence_refs=refs))
    verdict = own_verdict(checks, claims)
    counts = Counter(c.verification.value for c in checks)
    return VerifierReply(
        verdict=verdict,
        groundedness_score=round(sum(c.verification in GROUNDED for c in checks) / len(checks), 4) if checks else 0.0,
        critical_fact_count=sum(1 for c in claims if c.critical),
        claim_checks=checks,
        facts_checked=[LegacyFact.model_validate(f.model_dump(mode="json")) for f in legacy_facts(checks, claims)],
        rationale=(
            "Heuristic reference baseline (no language model): "
            f"{', '.join(f'{n} {k}' for k, n in sorted(counts.items())) or 'no claims'}; verdict {verdict.value}."
        ),
    )


class ReferenceVerifier(VerifierBase):
    """The default model `reference`: a deterministic heuristic baseline that any LLM should beat."""

    name = "reference"

    def __init__(self, settings: ReferenceSettings | None = None) -> None:
        self.settings = settings or ReferenceSettings()

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        started = time.perf_counter()
        raw = json.dumps(build_reply(inputs, self.settings).model_dump(mode="json"), ensure_ascii=False)
        return VerifierCall(
            raw_reply=raw,
            model=self.name,
            finish_reason="stop",
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": "heuristic baseline (no language model)",
            "version": VERSION,
            "lexicon": lexicon().digest,
            **self.settings.model_dump(mode="json"),
        }
