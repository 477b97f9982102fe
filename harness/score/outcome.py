"""The outcome of one result against its gold: one rule for scoring, conformance, decisions, junit and the report.

A result with a transport error is not scored. A scored quality result's verdict is right when it is
one of the gold verdicts; a claim is right when its class is one of the claim's gold labels (a gold
claim the verifier never classified is wrong). Unsafe PASS: a PASS where the gold forbids PASS.
The mismatch lines say what a scored result got wrong, in the one wording conformance and the report
use. Categories order what a reader sees first: conformance failures, errors, wrong verdicts, wrong
claims, then results that are right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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
    # what was judged, for the mismatch lines (references to the caller's values: nothing is copied or formatted
    # until a line is asked for); not part of the outcome's identity
    verdict: str | None = field(default=None, compare=False, repr=False)
    model_verdict: str | None = field(default=None, compare=False, repr=False)
    claims: Mapping[str, str] | None = field(default=None, compare=False, repr=False)
    gold_verdicts: Sequence[str] = field(default=(), compare=False, repr=False)
    gold_model_verdicts: Sequence[str] | None = field(default=None, compare=False, repr=False)
    gold_claims: Mapping[str, Sequence[str]] | None = field(default=None, compare=False, repr=False)

    @property
    def claims_right(self) -> int:
        return self.claims_total - len(self.claims_wrong)

    @property
    def verdict_mismatches(self) -> list[str]:
        """`verdict: expected [...], got X` when the verdict is not right, and the same for the model verdict when
        the gold names its verdicts and the model's is not one of them. None for a result that is not scored."""
        if not self.scored:
            return []
        out: list[str] = []
        if not self.verdict_correct:
            out.append(f"verdict: expected {_texts(self.gold_verdicts)}, got {_text(self.verdict)}")
        wanted_model = self.gold_model_verdicts
        if wanted_model is not None and self.model_verdict not in wanted_model:
            out.append(f"model_verdict: expected {_texts(wanted_model)}, got {_text(self.model_verdict)}")
        return out

    @property
    def claim_mismatches(self) -> list[str]:
        """`claims.C1: expected [...], got X` for every wrong claim (`claims_wrong`), in gold order."""
        if not self.scored:
            return []
        got, gold = self.claims or {}, self.gold_claims or {}
        return [f"claims.{cid}: expected {sorted(gold[cid])}, got {got.get(cid)}" for cid in self.claims_wrong]

    @property
    def mismatches(self) -> list[str]:
        """What a scored result got wrong against its gold: the verdict lines, then the claim lines."""
        return self.verdict_mismatches + self.claim_mismatches


def _texts(verdicts: Sequence[str]) -> list[str]:
    return sorted(str(v) for v in verdicts)


def _text(verdict: str | None) -> str | None:
    return None if verdict is None else str(verdict)


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
    gold_model_verdicts: Sequence[str] | None = None,
) -> Outcome:
    """The outcome of one result (a quality result; for a policy result only `scored` and the category matter).

    `gold_model_verdicts`: the model verdicts the gold accepts, when it names any (a policy case may); only the
    mismatch lines read them.
    """
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
        verdict=verdict,
        model_verdict=model_verdict,
        claims=claims,
        gold_verdicts=gold_verdicts,
        gold_model_verdicts=gold_model_verdicts,
        gold_claims=gold,
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
        gold_model_verdicts=record.gold.model_verdict,
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
