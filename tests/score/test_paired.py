"""The paired decision rule on outcomes whose right answer is worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.score.intervals import tango_ci
from harness.score.paired import combine, decide_counts, decide_paired
from harness.score.stats import binomial_two_sided_half


def _identical(n: int) -> np.ndarray:
    return np.arange(n) % 4 != 0  # three of four right, the same on both sides


def test_identical_answers_on_five_cases_cannot_tell() -> None:
    same = _identical(5)
    d = decide_paired(same, same)
    assert d is not None and d.outcome == "inconclusive"
    assert d.diff == 0 and d.ci == pytest.approx(tango_ci(0, 0, 5)) and d.p == 1.0
    assert d.cases_needed == 73  # z² (1 - m) / m rounded up, at a 5-point margin
    assert "5 paired cases cannot rule out a loss of 43.4 pp; about 73 are needed" in d.reason
    assert (d.interval, d.test, d.margin, d.alpha) == ("tango_score", "mcnemar_exact", 0.05, 0.05)


def test_identical_answers_on_the_full_corpus_ship() -> None:
    same = _identical(136)
    d = decide_paired(same, same)
    assert d is not None and d.outcome == "ship" and d.cases_needed is None
    assert d.worse_bound == pytest.approx(stats.norm.ppf(0.975) ** 2 / (136 + stats.norm.ppf(0.975) ** 2))
    assert "within the 5.0 pp margin" in d.reason


def test_five_losses_out_of_five_cannot_block() -> None:
    """McNemar's exact p for 5 of 5 discordant pairs one way is 2 / 32 = 0.0625: never below 0.05."""
    d = decide_paired(np.ones(5, bool), np.zeros(5, bool))
    assert d is not None and d.outcome == "inconclusive" and d.p == pytest.approx(0.0625)


def test_a_clear_loss_blocks_with_mcnemar_p() -> None:
    ctl = np.ones(20, bool)
    cand = np.arange(20) >= 8  # 8 losses, no win
    d = decide_paired(ctl, cand)
    assert d is not None and d.outcome == "block" and d.significantly_worse
    assert d.p == pytest.approx(binomial_two_sided_half(0, 8)) and d.diff == pytest.approx(-0.4)
    assert d.reason.startswith("verdict_accuracy: significantly worse, -40.0 pp (p = 0.008")


def test_lower_is_better_reads_the_upper_bound() -> None:
    """An unsafe-PASS rate that rises is worse: the upper bound of the interval is the worse side."""
    ctl = np.zeros(136, bool)
    cand = np.arange(136) < 3  # three new unsafe PASSes
    d = decide_paired(ctl, cand, metric="unsafe_pass_rate", lower_is_better=True)
    assert d is not None and d.worse_bound == pytest.approx(tango_ci(3, 0, 136)[1])
    assert d.outcome == ("ship" if d.worse_bound <= 0.05 else "inconclusive")
    better = decide_paired(cand, ctl, metric="unsafe_pass_rate", lower_is_better=True)
    assert better is not None and better.worse_bound < d.worse_bound


def test_epochs_of_a_case_are_one_cluster() -> None:
    """Three identical epochs of every case decide as the cases alone, with the clustered interval and test."""
    ctl = np.array([True, True, False, True, True, True, False, True, True, True])
    cand = np.array([True, False, False, True, False, True, True, True, False, True])
    once = decide_paired(ctl, cand)
    thrice = decide_paired(np.repeat(ctl, 3), np.repeat(cand, 3), np.repeat(np.arange(10), 3))
    assert once is not None and thrice is not None
    assert thrice.ci == pytest.approx(once.ci) and thrice.p == pytest.approx(once.p)
    assert thrice.cases == 10 and thrice.units == 30 and thrice.design_effect == pytest.approx(3.0)
    assert thrice.test == "cluster_sign_flip_exact" and once.test == "mcnemar_exact"


def test_counts_and_units_agree_and_bad_input_is_refused() -> None:
    assert decide_paired([], []) is None
    with pytest.raises(ValueError, match="paired one to one"):
        decide_paired([True], [True, False])
    by_units = decide_paired([True, False, True], [True, True, True], ["a", "a", "b"], metric="claim_accuracy")
    by_counts = decide_counts([1, 1], [2, 1], [1, 0], [0, 0], [2, 1], metric="claim_accuracy")
    assert by_units == by_counts


def test_combine_blocks_on_any_and_ships_on_all() -> None:
    ship = decide_paired(_identical(136), _identical(136))
    block = decide_paired(np.ones(20, bool), np.arange(20) >= 8)
    assert combine({"a": ship, "b": ship}) == "ship"
    assert combine({"a": ship, "b": block}) == "block"
    assert combine({"a": ship, "b": None}) == "inconclusive"
    assert combine({}) == "inconclusive"
