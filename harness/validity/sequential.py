"""Early stopping in the validity study: the run's sequential rule (`score.sequential`) over simulated pairs.

Each simulated pair is sent in a seeded random order, in looks, and decided at each look by the same rule a
`vbench run --stop-early` applies to its records, from the paired counts of the cases run so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.run.study import DEFAULT_DECIDE_ON
from harness.score.paired import DEFAULT_MARGIN, DecisionKind, PairedDecision
from harness.score.sequential import DEFAULT_LOOK_SIZE, StopReason, at_look, design, look_order
from harness.validity.simulate import LOWER_IS_BETTER, counts, decide_binary

__all__ = ["DEFAULT_LOOK_SIZE", "Stopped", "look_order", "sequential"]


@dataclass(frozen=True)
class Stopped:
    outcome: DecisionKind
    cases_run: int
    cases_total: int
    looks: int
    reason: StopReason | None

    @property
    def share_saved(self) -> float:
        return 1.0 - self.cases_run / self.cases_total if self.cases_total else 0.0


def sequential(
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
    n = len(order)
    plan = design(n, look_size, alpha)
    position = np.empty(n, int)
    position[np.asarray(order, int)] = np.arange(n)
    for k, seen in enumerate(plan.marks, 1):
        done = {
            name: (position[unit_case[name]] if unit_case else position[: len(ctl_units[name])]) < seen
            for name in gated
        }

        def decide_at(level: float, done: dict[str, np.ndarray] = done) -> dict[str, PairedDecision | None]:
            return {
                name: decide_binary(
                    *counts(ctl_units[name][done[name]], cand_units[name][done[name]]), name, margin, level
                )
                for name in gated
            }

        look = at_look(plan, k, decide_at, LOWER_IS_BETTER, margin)
        if look.stop:
            return Stopped(look.outcome, seen, n, k, look.reason)
    raise AssertionError("the last look sees every case, so it always stops")
