"""Statistics against values worked out by hand or from the textbook definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.score.stats import mcnemar_exact, paired_ratio_diff, ratio_ci, resampled_sums


def test_mcnemar_exact_matches_the_binomial_by_hand() -> None:
    a = np.array([True] * 6 + [False] * 1 + [True] * 5)
    b = np.array([False] * 6 + [True] * 1 + [True] * 5)
    a_only, b_only, p = mcnemar_exact(a, b)
    assert (a_only, b_only) == (6, 1)
    # two-sided exact: 2 * P(X <= 1), X ~ Bin(7, 0.5) = 2 * (1 + 7) / 128
    assert p == pytest.approx(16 / 128)


def test_mcnemar_with_no_discordant_pairs_is_one() -> None:
    same = np.array([True, False, True])
    assert mcnemar_exact(same, same) == (0, 0, 1.0)


def test_ratio_ci_brackets_the_estimate_and_is_reproducible() -> None:
    num = np.array([1, 0, 2, 1, 1, 0, 2, 2], dtype=float)
    den = np.array([2, 1, 2, 2, 1, 1, 2, 2], dtype=float)
    ci = ratio_ci(num, den)
    assert ci is not None
    assert ci[0] <= num.sum() / den.sum() <= ci[1]
    assert ratio_ci(num, den) == ci
    assert ratio_ci(np.array([]), np.array([])) is None


def test_constant_outcomes_give_a_degenerate_interval() -> None:
    assert ratio_ci(np.ones(10), np.ones(10)) == (1.0, 1.0)


def test_paired_difference_and_its_significance() -> None:
    right_a = np.ones(30)
    right_b = np.zeros(30)
    diff, ci, p = paired_ratio_diff(right_a, right_b, np.ones(30))
    assert diff == 1.0 and ci == (1.0, 1.0) and p == 0.0
    noise_a = np.array([1, 0] * 15, dtype=float)
    noise_b = np.array([0, 1] * 15, dtype=float)
    diff, ci, p = paired_ratio_diff(noise_a, noise_b, np.ones(30))
    assert diff == 0.0 and ci is not None and ci[0] < 0 < ci[1] and p > 0.5


@given(
    st.integers(min_value=1, max_value=60).flatmap(
        lambda n: st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3), min_size=n, max_size=n)
    ),
    st.integers(min_value=0, max_value=2**31),
)
@settings(max_examples=40, deadline=None)
def test_resampled_sums_are_the_sums_of_the_drawn_rows(rows: list[list[int]], seed: int) -> None:
    """The counts-times-table bootstrap equals adding up the rows each resample drew (the draws CIs always used)."""
    table = np.array(rows, dtype=float)
    drawn = np.random.default_rng(seed).integers(0, len(table), size=(200, len(table)))
    assert np.array_equal(resampled_sums(table, n_boot=200, seed=seed), table[drawn].sum(axis=1))


def test_resampled_sums_in_blocks_stay_within_the_memory_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MAX_DRAW_ELEMENTS the draws come in blocks: every resample still sums n drawn rows."""
    import harness.score.stats as stats

    monkeypatch.setattr(stats, "MAX_DRAW_ELEMENTS", 1000)
    table = np.ones((400, 2))
    sums = stats.resampled_sums(table, n_boot=50)
    assert sums.shape == (50, 2) and np.all(sums == 400.0)
