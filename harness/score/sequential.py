"""Early stopping: a group-sequential design with Lan–DeMets alpha spending and a non-binding futility stop.

Cases go in a seeded random order, in looks of a fixed size; the information fraction of look k is the share
of the planned cases run, t_k. At each look the one decision engine (`paired.decide_counts`, Tango's interval
and McNemar's test) decides the cases run so far at the look's nominal level `levels[k]`:

- **stop to block** when the engine blocks at that level (significantly worse);
- **stop to ship** when the engine ships at that level (every gated metric's worse-side bound within the margin).

The nominal levels come from the O'Brien–Fleming-type spending function of Lan & DeMets (1983, Biometrika
70:659–663), alpha_1(t) = 2 - 2 Phi(z_{1 - alpha_1/2} / sqrt t) per side (alpha_1 = alpha / 2, the one-sided
level the engine's block test and non-inferiority interval each hold), after O'Brien & Fleming (1979,
Biometrics 35:549–556). The boundaries are solved exactly for the looks taken by recursive numerical
integration over the Brownian-motion approximation of the score statistic (Armitage, McPherson & Rowe 1969;
Jennison & Turnbull 2000, *Group Sequential Methods*, ch. 7 and 19), so the chance of a wrong block, and of a
wrong ship, summed over all looks is the fixed-n test's. Early looks are very strict (a block at 20 of 136
cases needs p < 3e-7); the last look's level is below alpha (0.039 at 7 looks of 136 cases). With one look the
design is the fixed-n rule.

**Futility** (stochastic curtailment, Lan, Simon & Halperin 1982, Commun Stat C 1:207–219): stop when, at the
last look's level, the engine is inconclusive on the cases so far and, projecting the observed trend to the
planned cases, the conditional chance of a ship is below `FUTILITY` (10%) and that of a block below
`FUTILITY_BLOCK` (5%). A futility stop's outcome is `inconclusive`, with the reason "stopped for futility at
look k": it never ships nor blocks, so it cannot raise the false-ship or the false-block rate (it is
non-binding); requiring a small conditional chance of a block too keeps it from cutting a run that was
heading for a block (power). The
decision on the cases run, at the last look's level, is then inconclusive too: the summary's decision and the
stop agree.

Pure: the caller hands in a function that decides the cases so far at a given level (the study from counts,
a run from its records), so a run and the validity study share this one rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel
from scipy.optimize import brentq
from scipy.stats import norm

from harness.run.settings import StopEarlySettings
from harness.score.intervals import ALPHA
from harness.score.paired import DecisionKind, combine

DEFAULT_LOOK_SIZE = 20
FUTILITY = 0.10
"""Stop for futility when the conditional chance of a ship, on the current trend, is below this ..."""
FUTILITY_BLOCK = 0.05
"""... and that of a block below this (lower: a run heading for a block is rarely cut short, which keeps power)."""
METHOD = (
    "group-sequential, Lan-DeMets O'Brien-Fleming-type alpha spending (Lan & DeMets 1983; O'Brien & Fleming 1979), "
    f"non-binding futility when the conditional chances of a ship and a block are below {FUTILITY:g} and "
    f"{FUTILITY_BLOCK:g} (Lan, Simon & Halperin 1982)"
)
StopReason = Literal["block", "ship", "futility", "final"]


class MetricFigures(Protocol):
    """What the rule reads of one metric's decision (`PairedDecision`, or a run decision's metric)."""

    @property
    def outcome(self) -> DecisionKind: ...
    @property
    def diff(self) -> float | None: ...
    @property
    def discordant(self) -> int | None: ...
    @property
    def units(self) -> int: ...


DecideAt = Callable[[float], Mapping[str, MetricFigures | None]]
"""The gated metrics' decisions on the cases run so far, at a given two-sided level."""


class Design(BaseModel):
    """The looks of one sequential run: after how many cases each comes, and its nominal two-sided level."""

    cases: int
    look_size: int
    alpha: float
    marks: list[int]
    levels: list[float]


class Look(BaseModel):
    """What one look decided: `stop` False means go on sending cases."""

    look: int
    looks: int
    cases_run: int
    cases_planned: int
    level: float
    stop: bool
    outcome: DecisionKind
    reason: StopReason | None
    text: str


def look_marks(cases: int, look_size: int = DEFAULT_LOOK_SIZE) -> list[int]:
    """After how many cases each look comes (the last one sees every case)."""
    if look_size < 1:
        raise ValueError(f"the look size must be at least 1, got {look_size}")
    if cases < 1:
        raise ValueError("a sequential run needs at least one case")
    return [*range(look_size, cases, look_size), cases]


def look_order(n: int, seed: int) -> np.ndarray:
    """The seeded random order the cases are sent in (a permutation of range(n))."""
    return np.random.default_rng(seed).permutation(n)


def spent(t: float, alpha: float) -> float:
    """Lan–DeMets O'Brien–Fleming-type spending: the one-sided `alpha` spent by information fraction t."""
    return float(2 * (1 - norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(t)))) if t > 0 else 0.0


@lru_cache(maxsize=512)
def _boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """The one-sided z boundaries c_k: the chance of crossing first at look k, under no difference, is
    spent(t_k) - spent(t_{k-1}); solved by recursive integration of the continuation density on a grid."""
    out: list[float] = []
    grid = density = None
    previous_t = previous_spent = 0.0
    for t in fractions:
        target = spent(t, alpha) - previous_spent
        if grid is None:
            c = float(norm.isf(max(target, 1e-300)))
            b = c * math.sqrt(t)
            grid = np.linspace(-8 * math.sqrt(t), b, 2001)
            density = norm.pdf(grid, scale=math.sqrt(t))
        else:
            sd = math.sqrt(t - previous_t)
            step = grid[1] - grid[0]
            weights = density * step
            weights[[0, -1]] /= 2

            def crossing(bound: float, w: np.ndarray = weights, g: np.ndarray = grid, s: float = sd) -> float:
                return float((w * norm.sf((bound - g) / s)).sum())

            if target <= 0:
                b = float(grid[-1] + 10 * sd)
            else:
                b = brentq(lambda x, goal=target: crossing(x) - goal, grid[0] - 10 * sd, grid[-1] + 10 * sd, xtol=1e-10)
            new = np.linspace(min(grid[0], -8 * math.sqrt(t)), b, 2001)
            density = (weights[None, :] * norm.pdf((new[:, None] - grid[None, :]) / sd) / sd).sum(axis=1)
            grid = new
            c = b / math.sqrt(t)
        out.append(c)
        previous_t, previous_spent = t, spent(t, alpha)
    return tuple(out)


def design(cases: int, look_size: int = DEFAULT_LOOK_SIZE, alpha: float = ALPHA) -> Design:
    """The looks and their nominal two-sided levels for `cases` planned cases (one look: the fixed-n alpha)."""
    marks = look_marks(cases, look_size)
    if len(marks) == 1:
        return Design(cases=cases, look_size=look_size, alpha=alpha, marks=marks, levels=[alpha])
    bounds = _boundaries(tuple(m / cases for m in marks), alpha / 2)
    levels = [float(min(alpha, 2 * norm.sf(c))) for c in bounds]
    return Design(cases=cases, look_size=look_size, alpha=alpha, marks=marks, levels=levels)


def _chances(
    d: MetricFigures, lower_is_better: bool, fraction: float, z_final: float, margin: float
) -> tuple[float, float]:
    """Conditional chances of a ship and of a block for one metric at the planned size, on the current trend.

    The loss L (the worse-side difference) is projected to the planned units N = n / t: its final estimate
    is normal about the current one with variance s^2 (N - n) / N^2, s^2 the per-unit variance of the paired
    difference (discordance minus the squared difference). It ships when L_N + z s / sqrt N <= margin and blocks
    when L_N > z s / sqrt N. With no discordant unit the trend says nothing: a ship stays reachable.
    """
    n, disc, diff = d.units, d.discordant or 0, d.diff or 0.0
    s2 = disc / n - diff * diff if n else 0.0
    if n == 0 or disc == 0 or s2 <= 0:
        return 1.0, 0.0
    loss = diff if lower_is_better else -diff
    total = n / fraction
    s = math.sqrt(s2)
    spread = s * math.sqrt(max(total - n, 0.0)) / total
    edge = z_final * s / math.sqrt(total)
    if spread <= 0:
        return float(loss + edge <= margin), float(loss > edge)
    return float(norm.cdf((margin - edge - loss) / spread)), float(norm.sf((edge - loss) / spread))


def at_look(
    plan: Design,
    look: int,
    decide_at: DecideAt,
    lower_is_better: Mapping[str, bool],
    margin: float,
    futility: float = FUTILITY,
    futility_block: float = FUTILITY_BLOCK,
) -> Look:
    """The rule at look `look` (1-based) of `plan`: stop to block, to ship, for futility, or go on."""
    level, last = plan.levels[look - 1], plan.levels[-1]
    seen, looks = plan.marks[look - 1], len(plan.marks)

    def result(stop: bool, outcome: DecisionKind, why: StopReason | None, text: str) -> Look:
        return Look(look=look, looks=looks, cases_run=seen, cases_planned=plan.cases, level=level, stop=stop,
                    outcome=outcome, reason=why, text=text)  # fmt: skip

    now = decide_at(level)
    outcome = combine(now)
    if look == looks:
        return result(True, outcome, "final", f"ran all {seen} cases in {looks} looks: {outcome} at alpha {level:.3g}")
    if outcome in ("block", "ship"):
        return result(
            True, outcome, outcome, f"stopped to {outcome} at look {look} of {looks}, after {seen} of "
            f"{plan.cases} cases (alpha {level:.3g} at this look)",
        )  # fmt: skip
    final = decide_at(last)
    if combine(final) == "inconclusive" and final:
        z = float(norm.isf(last / 2))
        chances = [
            _chances(d, lower_is_better[name], seen / plan.cases, z, margin) if d is not None else (1.0, 0.0)
            for name, d in final.items()
        ]
        ship = min(c[0] for c in chances)
        block = sum(c[1] for c in chances)
        if ship < futility and block < futility_block:
            return result(
                True, "inconclusive", "futility", f"stopped for futility at look {look} of {looks}, after {seen} "
                f"of {plan.cases} cases: on the current trend a ship ({ship:.0%}) and a block ({block:.0%}) are "
                "both out of reach",
            )  # fmt: skip
    return result(False, "inconclusive", None, f"look {look} of {looks}: go on")


def stop_sentence(stop: StopEarlySettings) -> str:
    """The one line a person reads of a `--stop-early` run's stop (console and summary.md), from its record."""
    planned, saved = stop.requests_planned or 0, stop.requests_saved or 0
    share = f" ({saved / planned:.0%})" if planned else ""
    return (
        f"early stopping: {stop.text}; {stop.cases_run} of {stop.cases_planned} cases run, "
        f"{stop.requests_sent} requests sent, {saved} saved{share}"
    )
