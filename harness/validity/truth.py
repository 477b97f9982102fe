"""Every draw of the simulated judge run through the project's pipeline once, and the exact truth from them.

A case with k gold-labelled claims has 2^k possible draws (each claim right or wrong; k <= 5 in the quality
corpus). Each draw's reply goes through `pipeline.conclude` (the policy, as a run applies it) and is scored
by `score.outcome.outcome` (as the metrics score it), so a draw's outcome is the one `vbench run` records.
The probability of a draw at skill p is p^right (1-p)^wrong, so the expected value of each metric over a
fixed set of cases is exact: a sum over the table, no simulation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.corpus.schema import Case
from harness.run.records import gold_of, outcome_fields
from harness.score.outcome import outcome
from harness.system.models import VerifierCall
from harness.system.pipeline import conclude, prepare
from harness.validity.judge import JudgedCase, judged_case, labels_for, reply


@dataclass(frozen=True)
class CaseTable:
    """One case's outcome for each draw; index i of every array is the draw whose claim j is right when bit
    j of i is 0 (so index 0 is all right)."""

    judged: JudgedCase
    verdict_correct: np.ndarray
    unsafe_pass: np.ndarray
    claims_right: np.ndarray
    claims_total: int
    unsafe_eligible: bool

    @property
    def k(self) -> int:
        return len(self.judged.answers)

    def index(self, mask: Sequence[bool]) -> int:
        return sum(0 if right else 1 << j for j, right in enumerate(mask))

    def probabilities(self, skill: float) -> np.ndarray:
        wrong = np.array([bin(i).count("1") for i in range(1 << self.k)])
        return skill ** (self.k - wrong) * (1 - skill) ** wrong


def case_table(case: Case) -> CaseTable:
    """Run each of the case's draws through the pipeline and score it against the case's gold."""
    judged = judged_case(case)
    prepared = prepare(
        case.session.question, case.executor.emission(), case.session.tool_invocations, case.session.tool_trace_summary
    )
    gold = gold_of(case)
    rows = []
    for index in range(1 << len(judged.answers)):
        mask = [not (index >> j) & 1 for j in range(len(judged.answers))]
        raw = json.dumps(reply(prepared.claims, labels_for(judged, mask)))
        evaluation = conclude(prepared, VerifierCall(raw_reply=raw, model="simulated", finish_reason="stop"))
        fields = outcome_fields(evaluation)
        result = outcome(
            error=None,
            verdict=fields["verdict"],
            model_verdict=fields["model_verdict"],
            claims=fields["claims"],
            gold_verdicts=gold.verdict,
            gold_claims=gold.claims,
        )
        rows.append(
            (
                result.verdict_correct,
                result.unsafe_pass,
                result.claims_right,
                result.claims_total,
                result.unsafe_eligible,
            )
        )
    arr = np.array([r[:3] for r in rows], dtype=float)
    return CaseTable(judged, arr[:, 0], arr[:, 1], arr[:, 2], int(rows[0][3]), bool(rows[0][4]))


METRICS = ("verdict_accuracy", "claim_accuracy", "unsafe_pass_rate")


def expected_metrics(tables: Sequence[CaseTable], skill: float) -> dict[str, float | None]:
    """The exact expected value of each metric over these cases at this skill (a ratio of expected sums: the
    cases are fixed, only the judge's draws vary)."""
    verdict, claims, total, unsafe, eligible = 0.0, 0.0, 0, 0.0, 0
    for t in tables:
        p = t.probabilities(skill)
        verdict += float(p @ t.verdict_correct)
        claims += float(p @ t.claims_right)
        total += t.claims_total
        if t.unsafe_eligible:
            unsafe += float(p @ t.unsafe_pass)
            eligible += 1
    return {
        "verdict_accuracy": verdict / len(tables) if tables else None,
        "claim_accuracy": claims / total if total else None,
        "unsafe_pass_rate": unsafe / eligible if eligible else None,
    }
