"""The validity study's measurements: decisions, early stopping and per-variant coverage, per condition.

A condition is a subset of cases (the first n of a seeded order of the corpus) and a candidate skill against
the control skill; each of its pairs is an independent control run and candidate run (seeds 2i and 2i+1,
offset by the study seed). Truth is exact (`truth.expected_metrics`): a candidate is truly worse when a
gated metric is worse than the control's by at least the margin, equivalent when its skill is the control's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.run.study import DEFAULT_DECIDE_ON
from harness.score.paired import DEFAULT_MARGIN
from harness.validity.sequential import DEFAULT_LOOK_SIZE, look_order, sequential
from harness.validity.simulate import (
    LOWER_IS_BETTER,
    Rate,
    coverage,
    decide_pair,
    eligible,
    metric_units,
    simulate_run,
)
from harness.validity.truth import CaseTable, expected_metrics

CONTROL_SKILL = 0.8
CANDIDATE_SKILLS = (0.8, 0.78, 0.7, 0.6)
SIZES = (5, 10, 20, 136)


@dataclass(frozen=True)
class StudySettings:
    sizes: Sequence[int] = SIZES
    control_skill: float = CONTROL_SKILL
    candidate_skills: Sequence[float] = CANDIDATE_SKILLS
    pairs: int = 200
    seed: int = 26
    margin: float = DEFAULT_MARGIN
    alpha: float = 0.05
    gated: Sequence[str] = DEFAULT_DECIDE_ON
    stop_early: bool = True
    look_size: int = DEFAULT_LOOK_SIZE
    coverage: bool = True


@dataclass
class Condition:
    size: int
    candidate_skill: float
    truth_control: dict[str, float | None]
    truth_candidate: dict[str, float | None]
    truly_worse: bool
    equivalent: bool
    outcomes: dict[str, int] = field(default_factory=dict)
    early: dict[str, int] = field(default_factory=dict)
    early_mismatches: int = 0
    saved: list[float] = field(default_factory=list)
    stops: dict[str, int] = field(default_factory=dict)
    coverage: dict[str, tuple[Rate, float]] = field(default_factory=dict)

    @property
    def pairs(self) -> int:
        return sum(self.outcomes.values())

    def rate(self, outcome: str, early: bool = False) -> Rate:
        source = self.early if early else self.outcomes
        return Rate(source.get(outcome, 0), sum(source.values()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.size,
            "candidate_skill": self.candidate_skill,
            "truth": {"control": self.truth_control, "candidate": self.truth_candidate},
            "truly_worse": self.truly_worse,
            "equivalent": self.equivalent,
            "pairs": self.pairs,
            "decisions": {o: self.rate(o).as_dict() for o in ("ship", "block", "inconclusive")},
            "stop_early": {
                "decisions": {o: self.rate(o, early=True).as_dict() for o in ("ship", "block", "inconclusive")},
                "differs_from_fixed_n": self.early_mismatches,
                "stop_reasons": dict(sorted(self.stops.items())),
                "median_share_saved": float(np.median(self.saved)) if self.saved else None,
                "mean_share_saved": float(np.mean(self.saved)) if self.saved else None,
            },
            "coverage": {m: {**r.as_dict(), "mean_width": w} for m, (r, w) in self.coverage.items()},
        }


def truly_worse(
    control: dict[str, float | None], candidate: dict[str, float | None], gated: Sequence[str], margin: float
) -> bool:
    """Worse than the control by at least the margin on a gated metric, in exact expectation."""
    for name in gated:
        a, b = control[name], candidate[name]
        if a is not None and b is not None and (b - a if LOWER_IS_BETTER[name] else a - b) >= margin - 1e-12:
            return True
    return False


def subset(tables: Sequence[CaseTable], size: int, seed: int) -> list[CaseTable]:
    """The first `size` cases of a seeded order of the corpus (the same for every condition of that size)."""
    order = np.random.default_rng(seed).permutation(len(tables))
    return [tables[i] for i in sorted(order[: min(size, len(tables))])]


def run_condition(tables: Sequence[CaseTable], size: int, skill: float, s: StudySettings) -> Condition:
    cases = subset(tables, size, s.seed)
    truth_ctl = expected_metrics(cases, s.control_skill)
    truth_cand = expected_metrics(cases, skill)
    cond = Condition(
        size=len(cases),
        candidate_skill=skill,
        truth_control=truth_ctl,
        truth_candidate=truth_cand,
        truly_worse=truly_worse(truth_ctl, truth_cand, s.gated, s.margin),
        equivalent=skill == s.control_skill,
    )
    base = s.seed * 1_000_003 + round(skill * 10_000) * 10_007 + size * 101
    unit_case = {
        name: np.flatnonzero(eligible(cases)) if name == "unsafe_pass_rate" else np.arange(len(cases))
        for name in s.gated
    }
    candidates = []
    for i in range(s.pairs):
        control = simulate_run(cases, s.control_skill, base + 2 * i)
        candidate = simulate_run(cases, skill, base + 2 * i + 1)
        candidates.append(candidate)
        fixed = decide_pair(cases, control, candidate, s.gated, s.margin, s.alpha)
        cond.outcomes[fixed] = cond.outcomes.get(fixed, 0) + 1
        if s.stop_early:
            stopped = sequential(
                {n: metric_units(cases, control, n) for n in s.gated},
                {n: metric_units(cases, candidate, n) for n in s.gated},
                look_order(len(cases), base + 2 * i),
                s.look_size, s.gated, s.margin, s.alpha, unit_case,
            )  # fmt: skip
            cond.early[stopped.outcome] = cond.early.get(stopped.outcome, 0) + 1
            cond.early_mismatches += stopped.outcome != fixed
            cond.saved.append(stopped.share_saved)
            cond.stops[str(stopped.reason)] = cond.stops.get(str(stopped.reason), 0) + 1
    if s.coverage:
        cond.coverage = coverage(cases, candidates, truth_cand)
    return cond


def run_study(tables: Sequence[CaseTable], s: StudySettings) -> list[Condition]:
    return [run_condition(tables, size, skill, s) for size in s.sizes for skill in s.candidate_skills]


def skill_for_loss(tables: Sequence[CaseTable], control_skill: float, loss: float) -> float:
    """The candidate skill whose exact verdict accuracy is `loss` below the control's on these cases."""
    target = expected_metrics(tables, control_skill)["verdict_accuracy"]
    if target is None:
        raise ValueError("no case to measure verdict accuracy on")
    low, high = 0.0, control_skill
    for _ in range(40):  # verdict accuracy rises with skill
        mid = (low + high) / 2
        value = expected_metrics(tables, mid)["verdict_accuracy"] or 0.0
        low, high = (mid, high) if target - value > loss else (low, mid)
    return round(high, 4)
