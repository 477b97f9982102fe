"""The fast validity study: a few hundred simulated decisions of the engine, no HTTP, fixed seeds.

Each test fails when a rate of the decision engine (or of the per-variant intervals) leaves the band the
full study (`nox -s validity`) holds it to.
"""

from __future__ import annotations

from functools import cache
from statistics import median

import pytest

from harness.corpus.loader import load_cases
from harness.validity.report import (
    COVERAGE_MIN,
    FALSE_BLOCK_MAX,
    FALSE_SHIP_MAX,
    FALSE_SHIP_UPPER_MAX,
    POWER_MIN,
)
from harness.validity.study import StudySettings, run_condition, skill_for_loss, subset
from harness.validity.truth import CaseTable, case_table

SEED = 2026


@cache
def tables() -> list[CaseTable]:
    return [case_table(c) for c in load_cases(["cases/quality"])]


def settings(pairs: int, *, coverage: bool = False) -> StudySettings:
    return StudySettings(pairs=pairs, seed=SEED, coverage=coverage)


@pytest.mark.parametrize(("size", "skill"), [(5, 0.6), (10, 0.6), (20, 0.7), (136, 0.7)])
def test_a_truly_worse_candidate_does_not_ship(size: int, skill: float) -> None:
    cond = run_condition(tables(), size, skill, settings(80))
    assert cond.truly_worse
    for early in (False, True):
        ship = cond.rate("ship", early=early)
        assert ship.value <= FALSE_SHIP_MAX and ship.ci[1] <= FALSE_SHIP_UPPER_MAX, (early, cond.as_dict()["decisions"])


def test_an_equivalent_candidate_is_rarely_blocked() -> None:
    cond = run_condition(tables(), 136, 0.8, settings(100))
    assert cond.equivalent
    assert cond.rate("block").value <= FALSE_BLOCK_MAX
    assert cond.rate("block", early=True).value <= FALSE_BLOCK_MAX
    assert median(cond.saved) >= 0.2, cond.as_dict()["stop_early"]
    assert cond.stops.get("futility", 0) > 0


def test_a_candidate_16_points_worse_is_blocked_on_the_full_corpus() -> None:
    skill = skill_for_loss(subset(tables(), 136, SEED), 0.8, 0.16)
    cond = run_condition(tables(), 136, skill, settings(50))
    assert cond.rate("block").value >= POWER_MIN
    assert cond.rate("block", early=True).value >= POWER_MIN


@pytest.mark.parametrize("size", [10, 20])
def test_per_variant_intervals_cover_the_exact_truth(size: int) -> None:
    cond = run_condition(tables(), size, 0.7, settings(60, coverage=True))
    for name, (rate, width) in cond.coverage.items():
        assert rate.value >= COVERAGE_MIN, (name, rate, width)


def test_early_stopping_saves_requests_on_a_clearly_worse_candidate() -> None:
    cond = run_condition(tables(), 136, 0.55, settings(30))
    assert median(cond.saved) >= 0.2, cond.as_dict()["stop_early"]
    assert cond.rate("block", early=True).value >= POWER_MIN
