"""Statistics against values worked out by hand or from the textbook definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.score.stats import (
    binomial_two_sided_half,
    cases_needed,
    mcnemar_exact,
    ratio_ci,
    resampled_sums,
)


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


def test_constant_outcomes_never_give_a_degenerate_interval() -> None:
    """Ten of ten right: Wilson's lower bound n / (n + z²) = 0.722, not the bootstrap's [1, 1]; an empty rate
    (zero of five) reaches up to z² / (5 + z²) = 0.434 (the rule of three's score form), never [0, 0]."""
    z2 = 1.959963984540054**2
    assert ratio_ci(np.ones(10), np.ones(10)) == pytest.approx((10 / (10 + z2), 1.0))
    assert ratio_ci(np.zeros(5), np.ones(5)) == pytest.approx((0.0, z2 / (5 + z2)))
    # three identical epochs of five cases: at most five cases' worth of evidence (fewer after the small-sample
    # degrees-of-freedom shrink, t at 4 df = 2.776): wider than five independent cases, never narrower
    kg = 1.959963984540054**2 / 2.7764451051977934**2
    assert ratio_ci(np.zeros(5), 3 * np.ones(5)) == pytest.approx((0.0, z2 / (5 * kg + z2)))


@pytest.mark.parametrize(
    ("k", "n"), [(0, 1), (0, 8), (1, 8), (3, 7), (4, 8), (5, 8), (8, 8), (2, 30), (14, 30), (40, 1000), (490, 1000)]
)
def test_exact_binomial_p_is_scipys(k: int, n: int) -> None:
    """The stdlib two-sided binomial p at 1/2 (McNemar's exact test) gives scipy's binomtest p-value."""
    from scipy.stats import binomtest

    assert binomial_two_sided_half(k, n) == pytest.approx(binomtest(k, n, 0.5).pvalue, rel=1e-9, abs=1e-300)


def test_mcnemar_counts_discordant_pairs_and_tests_them() -> None:
    a = np.array([True] * 8 + [False] * 2 + [True] * 5)
    b = np.array([False] * 8 + [True] * 2 + [True] * 5)
    assert mcnemar_exact(a, b) == (8, 2, pytest.approx(binomial_two_sided_half(2, 10)))
    assert mcnemar_exact(a, b)[2] == pytest.approx(0.109375)  # 2 * (1 + 10 + 45) / 1024


def test_normal_quantiles_match_scipy() -> None:
    """Connor's sample size uses the stdlib normal quantile; scipy's gives the same pairs needed."""
    from scipy.stats import norm

    z_a, z_b = float(norm.ppf(0.975)), float(norm.ppf(0.8))
    want = (z_a * 0.3**0.5 + z_b * (0.3 - 0.1**2) ** 0.5) ** 2 / 0.1**2
    assert cases_needed(0.1, 0.3) == math.ceil(want - 1e-9)


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


def test_resampled_sums_in_blocks_are_the_same_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MAX_DRAW_ELEMENTS the draws come in blocks, and they are the draws of one (n_boot, n) call."""
    import harness.score.stats as stats

    table = np.random.default_rng(3).integers(0, 7, size=(400, 2)).astype(float)
    whole = table[np.random.default_rng(stats.SEED).integers(0, 400, size=(50, 400))].sum(axis=1)
    monkeypatch.setattr(stats, "MAX_DRAW_ELEMENTS", 1000)  # blocks of 2 resamples
    assert np.array_equal(stats.resampled_sums(table, n_boot=50), whole)


def test_resampled_sums_on_one_blas_thread_are_the_threaded_products() -> None:
    """The bootstrap's products run on one BLAS thread; on fractional values (epoch means) they are the very sums
    the default thread count gives, bit for bit (CIs must not move with the machine's cores)."""
    import harness.score.stats as stats

    n, n_boot = 1000, 500
    table = np.random.default_rng(5).integers(0, 30, size=(n, 3)) / 7.0
    draws = np.random.default_rng(stats.SEED).integers(0, n, size=(n_boot, n))
    counts = np.stack([np.bincount(row, minlength=n) for row in draws]).astype(float)
    threaded = np.concatenate([counts[i : i + 250] @ table for i in range(0, n_boot, 250)])
    assert np.array_equal(stats.resampled_sums(table, n_boot=n_boot), threaded)
