"""The one paired decision rule: candidate against control on one metric, from per-cluster counts.

Every comparison of two variants (a run's `decisions[]`, `comparisons[]`, `vbench compare`) ends here, so
they share one pairing unit (the case: its epochs, or its claims, are one cluster), one interval
(`intervals.clustered_paired_ci`, Tango's score interval when each case has one unit) and one test
(`intervals.sign_flip_p`, McNemar's exact test when each case has one unit). The outcome:

- `block`: significantly worse (p < alpha, the difference in the worse direction);
- `ship`: the interval's worse-side bound lies within the margin (non-inferiority at one-sided alpha / 2);
- `inconclusive`: neither. The paired cases cannot rule out a loss beyond the margin; `cases_needed` says
  about how many would, for the discordance observed (`intervals.cases_for_margin`).

Pure: numbers and numpy arrays in, a pydantic `PairedDecision` out; no I/O, no frames. Fractions throughout
(-0.05 is 5 points worse); `wording` turns them into points for people.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from harness.score.intervals import (
    ALPHA,
    cases_for_margin,
    clustered_paired_ci,
    paired_design_effect,
    sign_flip_p,
)
from harness.score.summary_model import DecisionKind
from harness.score.wording import format_p, pp_text

DEFAULT_MARGIN = 0.05
INTERVAL = "tango_score"
"""Tango's score interval (one unit per case); with clusters, on Rao-Scott design-effect adjusted counts."""
CLUSTERED_INTERVAL = "tango_score_design_effect"
TEST = "mcnemar_exact"
"""McNemar's exact test (one unit per case); with clusters, its exact sign-flip form over cases."""
CLUSTERED_TEST = "cluster_sign_flip_exact"
TESTS = {
    INTERVAL: "Tango's score interval of a paired difference of proportions (Tango 1998, Stat Med 17:891-908)",
    CLUSTERED_INTERVAL: "Tango's score interval on counts divided by the cluster design effect (Rao & Scott 1992; "
    "Obuchowski 1998 cluster variance), cases as clusters",
    TEST: "McNemar's exact test (two-sided binomial on the discordant pairs)",
    CLUSTERED_TEST: "exact sign-flip randomisation test of the per-case differences (McNemar's exact test when "
    "each case has one unit)",
}
"""What each interval and test name recorded in a decision is."""


class PairedDecision(BaseModel):
    """One metric's verdict on a candidate against its control, with every figure it was read from."""

    metric: str
    outcome: DecisionKind
    control: float
    candidate: float
    diff: float
    """candidate - control, a fraction."""
    ci: tuple[float, float]
    """The (1 - alpha) interval of `diff`."""
    p: float
    """Two-sided p of the paired test."""
    interval: str
    test: str
    margin: float
    alpha: float
    lower_is_better: bool
    cases: int
    units: int
    discordant: int
    """Units the two sides answered differently (either way)."""
    design_effect: float
    worse_bound: float
    """The interval's bound on the worse side, as a loss (positive = worse by that much)."""
    significantly_worse: bool
    non_inferior: bool
    cases_needed: int | None
    """For `inconclusive`: about how many paired cases the interval needs to fit inside the margin."""
    reason: str


def decide_counts(
    ctl_right: Sequence[float] | np.ndarray,
    cand_right: Sequence[float] | np.ndarray,
    cand_only: Sequence[float] | np.ndarray,
    ctl_only: Sequence[float] | np.ndarray,
    units: Sequence[float] | np.ndarray,
    *,
    metric: str = "verdict_accuracy",
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
    lower_is_better: bool = False,
) -> PairedDecision | None:
    """The decision on one metric from per-case counts (one entry per case, all the same length).

    ctl_right / cand_right: units where each side scores 1 (right; for a lower-is-better rate, the bad
    event); cand_only / ctl_only: units only that side scores 1; units: the case's paired units. None when
    there is no unit.
    """
    k, c, b, o, m = (np.asarray(v, float) for v in (ctl_right, cand_right, cand_only, ctl_only, units))
    total = float(m.sum())
    if len(m) == 0 or total <= 0:
        return None
    deff = paired_design_effect(b, o, m)
    ci = clustered_paired_ci(b, o, m, alpha)
    assert ci is not None
    diff = float((c.sum() - k.sum()) / total)
    p = sign_flip_p(c - k)
    clustered = bool(m.max() > 1)
    worse_sign = 1.0 if lower_is_better else -1.0
    worse_bound = ci[1] if lower_is_better else -ci[0]
    significantly_worse = diff * worse_sign > 0 and p < alpha
    non_inferior = worse_bound <= margin + 1e-12
    outcome: DecisionKind = "block" if significantly_worse else "ship" if non_inferior else "inconclusive"
    needed = None
    if outcome == "inconclusive":
        discordance = float((b.sum() + o.sum()) / total)
        needed = cases_for_margin(margin, discordance, total / len(m), deff, alpha)
    decision = PairedDecision(
        metric=metric,
        outcome=outcome,
        control=float(k.sum() / total),
        candidate=float(c.sum() / total),
        diff=diff,
        ci=(float(ci[0]), float(ci[1])),
        p=p,
        interval=CLUSTERED_INTERVAL if clustered else INTERVAL,
        test=CLUSTERED_TEST if clustered else TEST,
        margin=margin,
        alpha=alpha,
        lower_is_better=lower_is_better,
        cases=len(m),
        units=round(total),
        discordant=round(float(b.sum() + o.sum())),
        design_effect=deff,
        worse_bound=float(worse_bound),
        significantly_worse=significantly_worse,
        non_inferior=non_inferior,
        cases_needed=needed,
        reason="",
    )
    return decision.model_copy(update={"reason": reason(decision)})


def decide_paired(
    control: Sequence[bool] | np.ndarray,
    candidate: Sequence[bool] | np.ndarray,
    clusters: Sequence[object] | np.ndarray | None = None,
    *,
    metric: str = "verdict_accuracy",
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
    lower_is_better: bool = False,
) -> PairedDecision | None:
    """The decision on one metric from paired per-unit outcomes (True = right, or the bad event when lower is
    better); `clusters` names each unit's case (None: every unit its own case). None when there is no unit."""
    ctl, cand = np.asarray(control, bool), np.asarray(candidate, bool)
    if ctl.shape != cand.shape:
        raise ValueError(f"control has {ctl.size} units, candidate {cand.size}: they must be paired one to one")
    if ctl.size == 0:
        return None
    keys = np.arange(ctl.size) if clusters is None else np.asarray(clusters)
    _, index = np.unique(keys, return_inverse=True)
    count = index.max() + 1

    def per_case(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values.astype(float), minlength=count)

    return decide_counts(
        per_case(ctl),
        per_case(cand),
        per_case(cand & ~ctl),
        per_case(ctl & ~cand),
        per_case(np.ones(ctl.size, bool)),
        metric=metric,
        margin=margin,
        alpha=alpha,
        lower_is_better=lower_is_better,
    )


class HasOutcome(Protocol):
    @property
    def outcome(self) -> DecisionKind: ...


def combine(decisions: Mapping[str, HasOutcome | None]) -> DecisionKind:
    """The outcome over the gated metrics: block if any blocks, ship if every one was measured and ships
    (a `PairedDecision` each, or anything carrying its outcome; None: not measured)."""
    outcomes = [d.outcome if d is not None else "inconclusive" for d in decisions.values()]
    if "block" in outcomes:
        return "block"
    return "ship" if outcomes and all(o == "ship" for o in outcomes) else "inconclusive"


def reason(d: PairedDecision) -> str:
    """The sentence a person reads for this metric's outcome (console, reports, JUnit read it, never rebuild it)."""
    ci = f"{round((1 - d.alpha) * 100)}% CI [{d.ci[0] * 100 + 0.0:+.1f}, {d.ci[1] * 100 + 0.0:+.1f}] pp"
    margin = pp_text(d.margin, sign=False)
    if d.outcome == "block":
        return f"{d.metric}: significantly worse, {pp_text(d.diff)} (p {format_p(d.p)}, alpha {d.alpha:g})"
    if d.outcome == "ship":
        return f"{d.metric}: {pp_text(d.diff)}, {ci} within the {margin} margin"
    needed = f"about {d.cases_needed} are needed" if d.cases_needed is not None else "no number of cases would show it"
    return (
        f"{d.metric}: {pp_text(d.diff)}, {ci}: {d.cases} paired cases cannot rule out a loss of "
        f"{pp_text(d.worse_bound, sign=False)}; {needed} for a {margin} margin"
    )
