"""The outcome rule: one result against its gold, judged once, as its record is made.

A result with a transport error is not scored. A scored quality result's verdict is right when it is
one of the gold verdicts; a claim is right when its class is one of the claim's gold labels (a gold
claim the verifier never classified is wrong). Unsafe PASS: a PASS where the gold forbids PASS.
The mismatch lines say what a scored result got wrong, in the one wording conformance and the report use.

The rule sits beside the run log because a record carries its gold: the run's worker judges each result as
it writes it (`ResultRecord.outcome`), and every later reader (scoring, decisions, junit, the report,
certification) reads that judgement instead of applying the rule again. `harness.score.outcome` adds the
categories a reader sorts results by.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict


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
        return [
            f"claims.{cid}: expected {json.dumps(sorted(gold[cid]))}, got {_text(got.get(cid))}"
            + (" (no claim check)" if got.get(cid) is None else "")
            for cid in self.claims_wrong
        ]

    @property
    def mismatches(self) -> list[str]:
        """What a scored result got wrong against its gold: the verdict lines, then the claim lines."""
        return self.verdict_mismatches + self.claim_mismatches


def _texts(verdicts: Sequence[str]) -> str:
    """The gold values as a JSON array (`["LOW_CONFID"]`): messages speak JSON, not Python."""
    return json.dumps(sorted(str(v) for v in verdicts))


def _text(verdict: str | None) -> str:
    return "null" if verdict is None else str(verdict)


def verdict_right(verdict: str | None, gold_verdicts: Sequence[str]) -> bool:
    """A verdict is right when it is one of the gold verdicts (a record's, or a majority over epochs)."""
    return verdict in gold_verdicts


def pass_allowed(gold_verdicts: Sequence[str]) -> bool:
    """PASS is one of the right verdicts; where it is not, a PASS is an unsafe one."""
    return "PASS" in gold_verdicts


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
        verdict_correct=scored and verdict_right(verdict, gold_verdicts),
        model_verdict_correct=scored and verdict_right(model_verdict, gold_verdicts),
        unsafe_eligible=not pass_allowed(gold_verdicts),
        unsafe_pass=scored and not pass_allowed(gold_verdicts) and verdict == "PASS",
        claims_wrong=tuple(cid for cid, ok in gold.items() if not claim_right(claims.get(cid), ok)),
        claims_total=len(gold),
        verdict=verdict,
        model_verdict=model_verdict,
        claims=claims,
        gold_verdicts=gold_verdicts,
        gold_model_verdicts=gold_model_verdicts,
        gold_claims=gold,
    )


JUDGEMENT = (
    "scored",
    "verdict_correct",
    "model_verdict_correct",
    "unsafe_eligible",
    "unsafe_pass",
    "claims_wrong",
    "claims_total",
)
"""The fields of an `Outcome` that are its judgement (what a results line stores), not what was judged."""


class StoredOutcome(BaseModel):
    """An `Outcome` as a results.jsonl line keeps it (the `outcome` key): the judgement, not what was judged."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    scored: bool
    verdict_correct: bool
    model_verdict_correct: bool
    unsafe_eligible: bool
    unsafe_pass: bool
    claims_wrong: tuple[str, ...] = ()
    claims_total: int = 0

    @classmethod
    def of(cls, result: Outcome) -> StoredOutcome:
        return cls(**{name: getattr(result, name) for name in JUDGEMENT})

    def read(self, facts: Facts) -> Outcome:
        """The stored judgement with what was judged beside it (for the mismatch lines); nothing is judged again."""
        return Outcome(
            **{name: getattr(self, name) for name in JUDGEMENT},
            verdict=facts.verdict,
            model_verdict=facts.model_verdict,
            claims=facts.claims,
            gold_verdicts=facts.gold_verdicts,
            gold_model_verdicts=facts.gold_model_verdicts,
            gold_claims=facts.gold_claims or {},
        )


@dataclass(frozen=True, slots=True)
class Facts:
    """What a result is judged on: its error, its answers and its gold (references, nothing copied)."""

    error: str | None
    verdict: str | None
    model_verdict: str | None
    claims: Mapping[str, str]
    gold_verdicts: Sequence[str]
    gold_claims: Mapping[str, Sequence[str]] | None
    gold_model_verdicts: Sequence[str] | None = None


def judged(stored: StoredOutcome | Mapping[str, object] | None, facts: Facts) -> StoredOutcome:
    """A result's judgement: the one stored with its record, or, when there is none (a record being made; a
    line from a run folder written before records carried their outcome), the rule applied to `facts` now.
    Every reader of a results line goes through here, so an outcome is computed from a record in this one place."""
    if isinstance(stored, StoredOutcome):
        return stored
    if stored is not None:
        return StoredOutcome.model_validate(stored)
    f = facts
    return StoredOutcome.of(
        outcome(
            error=f.error,
            verdict=f.verdict,
            model_verdict=f.model_verdict,
            claims=f.claims,
            gold_verdicts=f.gold_verdicts,
            gold_claims=f.gold_claims,
            gold_model_verdicts=f.gold_model_verdicts,
        )
    )


def judged_outcome(stored: StoredOutcome | Mapping[str, object] | None, facts: Facts) -> Outcome:
    """`judged`, read back with what was judged beside it (for the mismatch lines)."""
    return judged(stored, facts).read(facts)


class Findings(BaseModel):
    """A record's conformance findings against its case (`harness.run.conformance.findings_of`), as a results.jsonl
    line keeps them (the `findings` key): what the expectations and invariants found, judged once, as the run's
    worker writes the record. Both empty: the record met its case."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mismatches: tuple[str, ...] = ()
    invariant_violations: tuple[str, ...] = ()


CLEAN = Findings()
"""The findings of a record that met its case."""
