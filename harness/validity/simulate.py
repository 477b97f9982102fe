"""Simulated paired runs of the judge of known skill, decided by the project's decision engine.

A variant's run on a set of cases is one draw per case (`judge.draw_mask`, the same draw the HTTP responder
makes), whose outcome is read from the case's pipeline table (`truth.case_table`). A pair of runs is
decided by `score.paired` on the gated metrics, exactly as a run decides it; each run's per-variant
intervals come from the registered metrics (`score.registry`), exactly as its summary shows them. The rates
(false ship, false block, power, coverage) carry Clopper–Pearson intervals (Clopper & Pearson 1934,
Biometrika 26:404–413): exact, so a rate's bound holds at the study's number of pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.stats import beta

from harness.run.study import DEFAULT_DECIDE_ON
from harness.score.paired import DEFAULT_MARGIN, DecisionKind, PairedDecision, combine, decide_counts
from harness.score.registry import Frames, metric
from harness.validity.judge import draw_mask
from harness.validity.truth import METRICS, CaseTable

LOWER_IS_BETTER = {"verdict_accuracy": False, "unsafe_pass_rate": True, "claim_accuracy": False}


@dataclass(frozen=True)
class Run:
    """One simulated run of a variant: per case, the outcome of its draw."""

    verdict_correct: np.ndarray
    unsafe_pass: np.ndarray
    claims_right: np.ndarray


def simulate_run(tables: Sequence[CaseTable], skill: float, seed: int) -> Run:
    rows = np.array([_draw(t, skill, seed) for t in tables], dtype=float).reshape(len(tables), 3)
    return Run(rows[:, 0], rows[:, 1], rows[:, 2])


def _draw(t: CaseTable, skill: float, seed: int) -> tuple[float, float, float]:
    i = t.index(draw_mask(t.judged, skill, seed))
    return float(t.verdict_correct[i]), float(t.unsafe_pass[i]), float(t.claims_right[i])


def eligible(tables: Sequence[CaseTable]) -> np.ndarray:
    return np.array([t.unsafe_eligible for t in tables], dtype=bool)


def metric_units(tables: Sequence[CaseTable], run: Run, name: str) -> np.ndarray:
    """The per-case 0/1 units a gated metric pairs (unsafe PASS: only the cases whose gold forbids PASS)."""
    if name == "verdict_accuracy":
        return run.verdict_correct
    if name == "unsafe_pass_rate":
        return run.unsafe_pass[eligible(tables)]
    raise ValueError(f"the validity study decides on verdict_accuracy and unsafe_pass_rate, not {name!r}")


@lru_cache(maxsize=200_000)
def decide_binary(
    ctl: int, cand: int, cand_only: int, ctl_only: int, n: int, name: str, margin: float, alpha: float
) -> PairedDecision | None:
    """The engine's decision on one metric with one 0/1 unit per case, from the paired counts.

    With one unit per case the engine's figures depend on the counts only, so they are cached by them; the
    per-case arrays handed to `decide_counts` are ones any such run could have produced.
    """
    both = ctl - ctl_only
    neither = n - both - cand_only - ctl_only
    k = np.repeat([1.0, 0.0, 1.0, 0.0], [both, cand_only, ctl_only, neither])
    c = np.repeat([1.0, 1.0, 0.0, 0.0], [both, cand_only, ctl_only, neither])
    if len(k) != n or cand != c.sum():
        raise ValueError(f"inconsistent paired counts {ctl, cand, cand_only, ctl_only, n}")
    return decide_counts(
        k, c, c * (1 - k), k * (1 - c), np.ones(n),
        metric=name, margin=margin, alpha=alpha, lower_is_better=LOWER_IS_BETTER[name],
    )  # fmt: skip


def counts(ctl: np.ndarray, cand: np.ndarray) -> tuple[int, int, int, int, int]:
    k, c = ctl.astype(bool), cand.astype(bool)
    return int(k.sum()), int(c.sum()), int((c & ~k).sum()), int((k & ~c).sum()), len(k)


def decide_pair(
    tables: Sequence[CaseTable],
    control: Run,
    candidate: Run,
    gated: Sequence[str] = DEFAULT_DECIDE_ON,
    margin: float = DEFAULT_MARGIN,
    alpha: float = 0.05,
) -> DecisionKind:
    """ship / block / inconclusive for the candidate against the control, by the engine's rule."""
    decisions = {
        name: decide_binary(
            *counts(metric_units(tables, control, name), metric_units(tables, candidate, name)), name, margin, alpha
        )
        for name in gated
    }
    return combine(decisions)


def variant_intervals(tables: Sequence[CaseTable], run: Run) -> dict[str, tuple[float, float] | None]:
    """Each metric's interval as a run's summary gives it (the registered metric's compute, with its CI)."""
    ids = [t.judged.case_id for t in tables]
    quality = pd.DataFrame(
        {
            "case_id": ids,
            "scored": True,
            "verdict_correct": run.verdict_correct.astype(bool),
            "unsafe_eligible": eligible(tables),
            "unsafe_pass": run.unsafe_pass.astype(bool),
        }
    )
    claim_ids, correct = [], []
    for cid, t, right in zip(ids, tables, run.claims_right, strict=True):
        claim_ids += [cid] * t.claims_total
        correct += [True] * int(right) + [False] * (t.claims_total - int(right))
    claims = pd.DataFrame({"case_id": claim_ids, "scored": True, "correct": correct})
    out: dict[str, tuple[float, float] | None] = {}
    for name in METRICS:
        value = metric(name).compute(Frames(quality, claims), True)
        out[name] = None if value.ci is None else (float(value.ci[0]), float(value.ci[1]))
    return out


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact two-sided (1 - alpha) interval of a binomial rate (Clopper & Pearson 1934)."""
    if n == 0:
        return (0.0, 1.0)
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


@dataclass(frozen=True)
class Rate:
    """k of n, with its Clopper–Pearson interval."""

    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def ci(self) -> tuple[float, float]:
        return clopper_pearson(self.k, self.n)

    def as_dict(self) -> dict[str, object]:
        return {"k": self.k, "n": self.n, "rate": self.value, "ci": list(self.ci)}


def covers(interval: tuple[float, float] | None, truth: float | None) -> bool:
    return interval is not None and truth is not None and interval[0] - 1e-12 <= truth <= interval[1] + 1e-12


def coverage(
    tables: Sequence[CaseTable], runs: Sequence[Run], truth: Mapping[str, float | None]
) -> dict[str, tuple[Rate, float]]:
    """Per metric: how often the run's interval holds the exact truth, and the intervals' mean width."""
    hits = dict.fromkeys(METRICS, 0)
    widths: dict[str, list[float]] = {m: [] for m in METRICS}
    for run in runs:
        for name, ci in variant_intervals(tables, run).items():
            hits[name] += covers(ci, truth[name])
            widths[name].append(float("nan") if ci is None else ci[1] - ci[0])
    return {m: (Rate(hits[m], len(runs)), float(np.nanmean(widths[m])) if runs else float("nan")) for m in METRICS}
