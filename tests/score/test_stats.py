"""Statistics against values worked out by hand or from the textbook definitions."""

from __future__ import annotations

import numpy as np
import pytest

from harness.score.stats import (
    mcnemar_exact,
    paired_ratio_diff,
    ratio_ci,
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
