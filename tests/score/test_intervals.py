"""Intervals and the paired test against published values, hand algebra and independent computations (scipy)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from harness.score.intervals import (
    cases_for_margin,
    cluster_rate_ci,
    clustered_paired_ci,
    paired_design_effect,
    sign_flip_p,
    t_of,
    tango_ci,
    wilson_ci,
)
from harness.score.stats import binomial_two_sided_half

Z2 = stats.norm.ppf(0.975) ** 2


def test_tango_with_no_discordant_pair_is_z2_over_n_plus_z2() -> None:
    """With b = c = 0 the score statistic is -sqrt(n d / (1 - d)), so the bound solves n d / (1 - d) = z²."""
    for n, points in ((5, 43.4), (136, 2.7)):
        low, high = tango_ci(0, 0, n)
        assert high == pytest.approx(Z2 / (n + Z2), abs=1e-9) and low == pytest.approx(-high, abs=1e-9)
        assert round(high * 100, 1) == points


def test_tango_matches_the_published_example() -> None:
    """Fagerland, Lydersen & Laake (2014, Stat Med 33:2850), airway hyper-responsiveness: n12 = 1, n21 = 7,
    N = 21, Tango's asymptotic score interval -0.286 (-0.517 to -0.026)."""
    low, high = tango_ci(1, 7, 21)
    assert (round(low, 3), round(high, 3)) == (-0.517, -0.026)


def _tango_by_scipy(b: int, c: int, n: int) -> tuple[float, float]:
    """The score interval from its definition: the constrained MLE by numeric optimisation, roots by brentq."""

    def z(delta: float) -> float:
        def nll(q: float) -> float:
            cells = np.array([q + delta, q, 1 - 2 * q - delta])
            counts = np.array([b, c, n - b - c])
            return -float(np.sum(counts[counts > 0] * np.log(np.clip(cells[counts > 0], 1e-300, None))))

        lo, hi = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12
        q = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}).x
        return (b - c - n * delta) / math.sqrt(n * (2 * q + delta - delta * delta))

    d = (b - c) / n
    z0 = math.sqrt(Z2)
    return (
        optimize.brentq(lambda x: z(x) - z0, -0.999999, d),
        optimize.brentq(lambda x: z(x) + z0, d, 0.999999),
    )


@pytest.mark.parametrize(("b", "c", "n"), [(1, 7, 21), (3, 0, 10), (5, 5, 40), (12, 4, 136), (0, 2, 5)])
def test_tango_matches_an_independent_root_finding(b: int, c: int, n: int) -> None:
    assert tango_ci(b, c, n) == pytest.approx(_tango_by_scipy(b, c, n), abs=2e-4)


def test_wilson_matches_scipy_and_is_never_empty() -> None:
    for x, n in ((0, 5), (3, 10), (10, 10), (47, 136)):
        want = stats.binomtest(x, n).proportion_ci(method="wilson")
        assert wilson_ci(x, n) == pytest.approx((want.low, want.high), abs=1e-9)
    low, high = wilson_ci(0, 5)
    assert low == 0.0 and high == pytest.approx(Z2 / (5 + Z2))


def test_cluster_rate_ci_counts_copies_of_a_case_once() -> None:
    """Three identical epochs of each case carry the information of one: the interval of the cases alone, on
    Korn & Graubard's degrees-of-freedom shrunk sample size (z / t_(k-1))² once the units cluster."""
    per_case = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], float)
    alone = cluster_rate_ci(per_case, np.ones(10))
    assert alone == pytest.approx(wilson_ci(7, 10))
    kg = (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 9)) ** 2
    tripled = cluster_rate_ci(3 * per_case, 3 * np.ones(10))
    assert tripled == pytest.approx(wilson_ci(7 * kg, 10 * kg))
    assert tripled[0] < alone[0] and tripled[1] > alone[1]
    # independent epochs (different outcomes within a case) are not penalised below the binomial's width
    mixed = cluster_rate_ci(np.array([1, 2, 1, 2, 1, 2, 1, 2, 1, 2], float), 3 * np.ones(10))
    assert mixed == pytest.approx(wilson_ci(15 * kg, 30 * kg), abs=0.02)
    kg5 = (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 4)) ** 2
    assert cluster_rate_ci(np.zeros(5), 3 * np.ones(5)) == pytest.approx((0.0, Z2 / (5 * kg5 + Z2)))


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 19, 135, 200, 201, 5000])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_t_quantile_matches_scipy(df: int, alpha: float) -> None:
    assert t_of(alpha, df) == pytest.approx(stats.t.ppf(1 - alpha / 2, df), rel=1e-7)


def test_clustered_paired_ci_is_tango_with_one_unit_per_case_and_counts_copies_once() -> None:
    cand_only = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0], float)
    ctl_only = np.array([0, 1, 0, 0, 0, 1, 1, 0, 1, 0], float)
    ones = np.ones(10)
    assert paired_design_effect(cand_only, ctl_only, ones) == 1.0
    assert clustered_paired_ci(cand_only, ctl_only, ones) == pytest.approx(tango_ci(3, 4, 10))
    assert paired_design_effect(4 * cand_only, 4 * ctl_only, 4 * ones) == pytest.approx(4.0)
    assert clustered_paired_ci(4 * cand_only, 4 * ctl_only, 4 * ones) == pytest.approx(tango_ci(3, 4, 10))
    # no discordance at all: each case counts once, the bounds stay ±z²/(K + z²)
    assert clustered_paired_ci(np.zeros(5), np.zeros(5), 3 * np.ones(5)) == pytest.approx(tango_ci(0, 0, 5))


def _sign_flip_by_enumeration(d: list[int]) -> float:
    observed = abs(sum(d))
    flips = list(itertools.product((-1, 1), repeat=len(d)))
    return sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed for signs in flips) / len(flips)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=9))
def test_sign_flip_p_is_the_enumerated_randomisation_test(d: list[int]) -> None:
    assert sign_flip_p(np.array(d)) == pytest.approx(_sign_flip_by_enumeration(d), abs=1e-12)


def test_sign_flip_on_single_units_is_mcnemar_exact() -> None:
    for a_only, b_only in ((5, 0), (8, 2), (6, 1), (3, 3), (40, 20)):
        d = np.array([1] * a_only + [-1] * b_only + [0] * 7)
        assert sign_flip_p(d) == pytest.approx(binomial_two_sided_half(b_only, a_only + b_only), rel=1e-9)
    assert sign_flip_p(np.zeros(4)) == 1.0


def test_cases_for_margin_is_the_smallest_n_whose_interval_fits() -> None:
    """With no discordance z²/(n + z²) <= m solves to n >= z² (1 - m) / m: 72.99, so 73 at a 5-point margin."""
    assert cases_for_margin(0.05, 0.0) == math.ceil(Z2 * 0.95 / 0.05) == 73
    for discordance in (0.1, 0.3):
        n = cases_for_margin(0.05, discordance)
        assert n is not None
        half = n * discordance / 2
        assert tango_ci(half, half, n)[1] <= 0.05 < tango_ci(half * (n - 1) / n, half * (n - 1) / n, n - 1)[1]
    # units per case and their design effect scale it: three independent epochs need a third of the cases
    assert cases_for_margin(0.05, 0.0, units_per_case=3.0, design_effect=1.0) == math.ceil(Z2 * 0.95 / 0.05 / 3)
    assert cases_for_margin(0.0, 0.1) is None
