"""Early stopping: a group-sequential Haybittle–Peto design with exact curtailment for futility.

Cases go in a seeded random order, in looks of a fixed size. At an interim look the engine decides on the
cases run so far at the strict level `INTERIM_ALPHA` (0.001): stop to block when a gated metric is
significantly worse at that level, stop to ship when every gated metric's (1 - 0.001) interval is within the
margin. The last look decides at the alpha left over, alpha - (looks - 1) x 0.001, so by Bonferroni's
inequality the chance of a wrong block, or of a wrong ship, over all looks stays within the fixed-n test's
alpha (Haybittle 1971, Br J Radiol 44:793–797; Peto et al. 1976, Br J Cancer 34:585–612; Jennison &
Turnbull 2000, *Group Sequential Methods*, ch. 2). Futility is exact curtailment (Lan, Simon & Halperin 1982,
Commun Stat C 1:207–219): stop once, at the last look's level, no metric can block and some metric cannot
ship whatever the cases not yet run answer, bounded by the two extreme completions (every remaining paired
unit going the candidate's way, or the control's; with one unit per case the engine's test and interval
move monotonically with those counts). A futility stop only ever gives `inconclusive`, which neither ships
nor blocks, so it moves no error rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.run.study import DEFAULT_DECIDE_ON
from harness.score.paired import DEFAULT_MARGIN, Outcome, PairedDecision
from harness.score.validity.simulate import LOWER_IS_BETTER, counts, decide_binary

DEFAULT_LOOK_SIZE = 20


@dataclass(frozen=True)
class Stopped:
    outcome: Outcome
    cases_run: int
    cases_total: int
    looks: int
    reason: str

    @property
    def share_saved(self) -> float:
        return 1.0 - self.cases_run / self.cases_total if self.cases_total else 0.0


def look_order(n: int, seed: int) -> np.ndarray:
    """The seeded random order the cases are sent in."""
    return np.random.default_rng(seed).permutation(n)


def _bounds(
    ctl: np.ndarray, cand: np.ndarray, remaining: int, name: str, margin: float, alpha: float
) -> tuple[PairedDecision | None, PairedDecision | None]:
    """The metric's final decision under the completion best for the candidate and the one worst for it."""
    k, c, b, o, n = counts(ctl, cand)
    total = n + remaining
    if total == 0:
        return None, None
    lower = LOWER_IS_BETTER[name]
    # the candidate's way: it alone right (or, lower is better, the control alone has the bad event)
    good = (k + remaining, c, b, o + remaining) if lower else (k, c + remaining, b + remaining, o)
    bad = (k, c + remaining, b + remaining, o) if lower else (k + remaining, c, b, o + remaining)
    return decide_binary(*good, total, name, margin, alpha), decide_binary(*bad, total, name, margin, alpha)


INTERIM_ALPHA = 0.001


def final_alpha(looks: int, alpha: float = 0.05) -> float:
    """The last look's level: what the interim looks left of alpha."""
    left = alpha - (looks - 1) * INTERIM_ALPHA
    if left <= 0:
        raise ValueError(f"{looks} looks spend all of alpha {alpha} at {INTERIM_ALPHA} each: use larger looks")
    return left


def curtailed(
    ctl_units: dict[str, np.ndarray],
    cand_units: dict[str, np.ndarray],
    order: Sequence[int] | np.ndarray,
    look_size: int = DEFAULT_LOOK_SIZE,
    gated: Sequence[str] = DEFAULT_DECIDE_ON,
    margin: float = DEFAULT_MARGIN,
    alpha: float = 0.05,
    unit_case: dict[str, np.ndarray] | None = None,
) -> Stopped:
    """Run the looks over cases in `order`; `*_units[name]` are the metric's per-case 0/1 units in case order
    and `unit_case[name]` the case index of each (default: unit i is case i)."""
    if look_size < 1:
        raise ValueError(f"look_size must be at least 1, got {look_size}")
    n = len(order)
    position = np.empty(n, int)
    position[np.asarray(order, int)] = np.arange(n)
    marks = [*range(look_size, n, look_size), n]
    last = final_alpha(len(marks), alpha)
    for looks, seen in enumerate(marks, 1):
        now, best, worst = {}, {}, {}
        for name in gated:
            where = position[unit_case[name]] if unit_case else position[: len(ctl_units[name])]
            done = where < seen
            ctl, cand = ctl_units[name][done], cand_units[name][done]
            remaining = int((~done).sum())
            if seen < n and len(ctl):
                now[name] = decide_binary(*counts(ctl, cand), name, margin, INTERIM_ALPHA)
            best[name], worst[name] = _bounds(ctl, cand, remaining, name, margin, last)
        if seen < n and any(d is not None and d.outcome == "block" for d in now.values()):
            return Stopped("block", seen, n, looks, _why("block", seen, n, INTERIM_ALPHA))
        if seen < n and len(now) == len(gated) and all(d is not None and d.outcome == "ship" for d in now.values()):
            return Stopped("ship", seen, n, looks, _why("ship", seen, n, INTERIM_ALPHA))
        if seen == n:
            final = [best[g] for g in gated]
            if any(d is not None and d.outcome == "block" for d in final):
                return Stopped("block", seen, n, looks, _why("block", seen, n, last))
            if all(d is not None and d.outcome == "ship" for d in final):
                return Stopped("ship", seen, n, looks, _why("ship", seen, n, last))
            return Stopped("inconclusive", seen, n, looks, _why("inconclusive", seen, n, last))
        no_block = all(d is None or d.outcome != "block" for d in worst.values())
        no_ship = any(d is None or d.outcome != "ship" for d in best.values())
        if no_block and no_ship:
            return Stopped("inconclusive", seen, n, looks, _why("futility", seen, n, last))
    raise AssertionError("the last look sees every case, so it always decides")


def _why(what: str, seen: int, n: int, level: float) -> str:
    if what == "futility":
        return f"after {seen} of {n} cases neither a block nor a ship is reachable at alpha {level:g}: inconclusive"
    return f"after {seen} of {n} cases: {what} at alpha {level:g}"
