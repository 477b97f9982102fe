"""The sequential design: its spending holds alpha over the looks, and its futility stop never ships or blocks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from harness.score.paired import decide_paired
from harness.score.sequential import at_look, design, look_marks, spent

LOWER = {"verdict_accuracy": False}


def test_one_look_is_the_fixed_n_rule() -> None:
    assert design(20, 20).levels == [0.05]
    assert look_marks(136) == [20, 40, 60, 80, 100, 120, 136]


def test_the_boundaries_spend_exactly_the_one_sided_alpha_over_the_looks() -> None:
    """Under no difference the standardised statistic at the looks is Brownian motion (Jennison & Turnbull
    2000, ch. 3): simulated, it crosses the boundaries in alpha / 2 of paths, and by each look in the spent share."""
    plan = design(136)
    t = np.array(plan.marks) / 136
    rng = np.random.default_rng(7)
    paths = (rng.normal(size=(400_000, len(t))) * np.sqrt(np.diff(np.r_[0.0, t]))).cumsum(axis=1) / np.sqrt(t)
    crossed = paths > norm.isf(np.array(plan.levels) / 2)
    first = np.cumsum(crossed, axis=1) > 0
    assert first[:, -1].mean() == pytest.approx(0.025, abs=0.0015)
    assert first[:, 3].mean() == pytest.approx(spent(t[3], 0.025), abs=0.001)
    assert plan.levels == sorted(plan.levels) and plan.levels[0] < 1e-6 and 0.03 < plan.levels[-1] < 0.05


def _decide(ctl: list[bool], cand: list[bool]):
    return lambda level: {"verdict_accuracy": decide_paired(ctl, cand, metric="verdict_accuracy", alpha=level)}


def test_a_look_stops_to_block_only_at_its_own_level() -> None:
    plan = design(136)
    # the candidate alone wrong on 14 cases, never alone right: McNemar p = 2 * 0.5**14 = 1.2e-4
    ctl, cand = [True] * 60, [False] * 14 + [True] * 46
    assert plan.levels[1] < 1.2e-4 < plan.levels[2]
    look2 = at_look(plan, 2, _decide(ctl[:40], cand[:40]), LOWER, 0.05)
    assert not look2.stop and look2.reason is None
    look3 = at_look(plan, 3, _decide(ctl, cand), LOWER, 0.05)
    assert look3.stop and (look3.outcome, look3.reason) == ("block", "block")


def test_futility_gives_inconclusive_when_neither_a_ship_nor_a_block_is_in_reach() -> None:
    plan = design(136)
    # 60 cases, 24 discordant split evenly: no trend, and too noisy to show a 5 pp margin by 136 cases
    ctl = [True] * 12 + [False] * 12 + [True] * 36
    cand = [False] * 12 + [True] * 12 + [True] * 36
    look = at_look(plan, 3, _decide(ctl, cand), LOWER, 0.05)
    assert look.stop and (look.outcome, look.reason) == ("inconclusive", "futility")
    assert "stopped for futility at look 3" in look.text
    # a candidate heading for a block is not stopped for futility: 12 of 14 discordant pairs against it
    worse = [False] * 12 + [True] * 2 + [True] * 46
    ctl2 = [True] * 12 + [False] * 2 + [True] * 46
    going = at_look(plan, 3, _decide(ctl2, worse), LOWER, 0.05)
    assert going.reason != "futility"
    # and an identical candidate is never futile: a ship stays in reach
    same = at_look(plan, 1, _decide([True] * 20, [True] * 20), LOWER, 0.05)
    assert not same.stop


def test_the_last_look_decides_whatever_the_evidence() -> None:
    plan = design(136)
    last = at_look(plan, 7, _decide([True] * 136, [True] * 136), LOWER, 0.05)
    assert last.stop and (last.reason, last.outcome) == ("final", "ship")
