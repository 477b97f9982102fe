"""The outcome of one result against its gold: the one rule scoring, decisions, junit and the report share.

A result with a transport error is not scored. A scored quality result's verdict is right when it is
one of the gold verdicts; a claim is right when its class is one of the claim's gold labels (a gold
claim the verifier never classified is wrong). Unsafe PASS: a PASS where the gold forbids PASS.
Categories order what a reader sees first: conformance failures, errors, wrong verdicts, wrong
claims, then results that are right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.run.log import ResultRecord

CONFORMANCE_FAILURE, ERROR, VERDICT_WRONG, CLAIMS_WRONG, RIGHT = range(5)
CATEGORY_NAMES = {
    CONFORMANCE_FAILURE: "conformance failure",
    ERROR: "error",
    VERDICT_WRONG: "verdict wrong",
    CLAIMS_WRONG: "claims wrong",
    RIGHT: "right",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    scored: bool
    verdict_correct: bool
    model_verdict_correct: bool
    unsafe_eligible: bool
    unsafe_pass: bool
    claims_wrong: tuple[str, ...]
    claims_total: int

    @property
    def claims_right(self) -> int:
        return self.claims_total - len(self.claims_wrong)


def claim_right(label: str | None, acceptable: Sequence[str]) -> bool:
    """A claim class is right when it is one of the acceptable gold labels."""
    return label in acceptable


def outcome(
    *,
    error: str | None,
    verdict: str | None,
    model_verdict: str | None,
    claims: Mapping[str, str],
    gold_verdicts: Sequence[str],
    gold_claims: Mapping[str, Sequence[str]] | None,
) -> Outcome:
    """The outcome of one result (a quality result; for a policy result only `scored` and the category matter)."""
    scored = error is None
    gold = gold_claims or {}
    return Outcome(
        scored=scored,
        verdict_correct=scored and verdict in gold_verdicts,
        model_verdict_correct=scored and model_verdict in gold_verdicts,
        unsafe_eligible="PASS" not in gold_verdicts,
        unsafe_pass=scored and "PASS" not in gold_verdicts and verdict == "PASS",
        claims_wrong=tuple(cid for cid, ok in gold.items() if not claim_right(claims.get(cid), ok)),
        claims_total=len(gold),
    )


def record_outcome(record: ResultRecord) -> Outcome:
    """The outcome of a result record of the run log."""
    return outcome(
        error=record.error,
        verdict=record.verdict,
        model_verdict=record.model_verdict,
        claims=record.claims,
        gold_verdicts=record.gold.verdict,
        gold_claims=record.gold.claims,
    )


def category(result: Outcome, kind: str, conformance_failed: bool) -> int:
    """Where a result stands, worst first: conformance failure, error, verdict wrong, claims wrong, right."""
    if conformance_failed:
        return CONFORMANCE_FAILURE
    if not result.scored:
        return ERROR
    if kind == "policy":
        return RIGHT
    if not result.verdict_correct:
        return VERDICT_WRONG
    return CLAIMS_WRONG if result.claims_wrong else RIGHT


def is_failure(cat: int) -> bool:
    """A category the report always shows: a conformance failure, an error or a wrong verdict."""
    return cat <= VERDICT_WRONG
