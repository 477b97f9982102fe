"""Statistics: rate CIs, the cluster bootstrap (for figures that are not rates), McNemar's exact test, power.

Rates get score intervals from `harness.score.intervals`; the cluster bootstrap is kept for figures with
no score interval (balanced accuracy). Resampling is over cases (clusters), so several epochs or claims of
one case never pass for independent evidence. Seeds are fixed: the same log gives the
same intervals, so a resumed run ends with the same figures. The exact binomial
tail and the normal quantile come from the standard library (`math`, `statistics`):
scipy.stats cost every `vbench run` a second of imports for two functions
(tests check both against scipy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from statistics import NormalDist

import numpy as np
from threadpoolctl import ThreadpoolController

from harness.score.intervals import cluster_rate_ci

N_BOOT = 2000
SEED = 20261130
MAX_DRAW_ELEMENTS = 250_000
"""Draws held at once (2 MB per array): above it they come in blocks of resamples, so memory stays flat in the
number of cases. numpy's generator gives the same stream in pieces as in one call, so the draws (and every CI)
are the ones a single (n_boot, n) draw gives, whatever the block size (a test checks it)."""


def resampled_sums(values: np.ndarray, n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """Column sums of `values` (one row per cluster, one column per count) over `n_boot` resamples of its rows.

    Returns an (n_boot, columns) array. One home for the cluster bootstrap's draws: every CI resamples here.
    Each resample is a row of draw counts per cluster (`bincount` of its draws) times the table, the same sums
    as adding the drawn rows, exactly so for the counts every caller passes, at a fraction of the cost.
    """
    table = np.asarray(values, dtype=float).reshape(len(values), -1)
    n, k = table.shape
    rng = np.random.default_rng(seed)
    rows = max(1, MAX_DRAW_ELEMENTS // max(1, n))
    out = np.empty((n_boot, k))
    for start in range(0, n_boot, rows):
        block = min(rows, n_boot - start)
        draws = rng.integers(0, n, size=(block, n))
        draws += (np.arange(block) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=block * n).reshape(block, n)
        with _blas().limit(limits=1, user_api="blas"):
            out[start : start + block] = counts.astype(float) @ table
    return out


@cache
def _blas() -> ThreadpoolController:
    """numpy's BLAS, run on one thread for the bootstrap's products: a (block × n) by (n × a few) product is far too
    small to share, and BLAS's threads cost more to start and join than the product (on a busy 2-core machine,
    4x the whole bootstrap). The sums are the same on any number of threads: OpenBLAS shares a product out by
    blocks of rows and columns, and each sum is still added whole, in one order (a test compares them)."""
    return ThreadpoolController()


def ratio_ci(numerators: np.ndarray, denominators: np.ndarray) -> tuple[float, float] | None:
    """95% CI of the rate sum(num)/sum(den) over clusters (cases): Wilson's interval on design-effect adjusted
    counts (`intervals.cluster_rate_ci`). Never [0, 0] or [1, 1] from a non-empty sample, unlike a percentile
    bootstrap of a sample with no spread."""
    return cluster_rate_ci(np.asarray(numerators, float), np.asarray(denominators, float))


def mcnemar_exact(right_a: np.ndarray, right_b: np.ndarray) -> tuple[int, int, float]:
    """McNemar's exact test on paired binary outcomes: (a-only right, b-only right, two-sided p)."""
    a_only = int(np.sum(right_a & ~right_b))
    b_only = int(np.sum(~right_a & right_b))
    if a_only + b_only == 0:
        return a_only, b_only, 1.0
    return a_only, b_only, binomial_two_sided_half(min(a_only, b_only), a_only + b_only)


def binomial_two_sided_half(k: int, n: int) -> float:
    """Exact two-sided p-value of k successes in n trials at p = 1/2 (scipy's `binomtest(k, n).pvalue`).

    The distribution is symmetric, so the outcomes as unlikely as k are the two tails: 2 * P(X <= min(k, n-k)),
    capped at 1. The tail is summed in log space (`lgamma`), so large n neither overflows nor loses the tail.
    """
    k = min(k, n - k)
    if 2 * k >= n:
        return 1.0
    log_norm = math.lgamma(n + 1) - n * math.log(2.0)
    logs = [log_norm - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]
    top = max(logs)
    tail = math.exp(top) * math.fsum(math.exp(x - top) for x in logs)
    return min(1.0, 2.0 * tail)


def mde_paired_binary(n: int, discordant: float, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest paired difference in a rate that n pairs detect with this power (McNemar, normal approximation).

    Connor's sample size for paired proportions, n = (z_a·√ψ + z_b·√(ψ−δ²))² / δ², solved for δ, where
    ψ is the share of discordant pairs. A true difference δ needs at least δ discordance, so ψ is taken
    as max(observed ψ, δ): two runs that agree on every pair still get an honest, non-zero MDE.
    None when there is no pair, or when even δ = 1 cannot be detected.
    """
    if n <= 0:
        return None
    psi = discordant / n

    def needed(delta: float) -> float:
        return _connor_n(delta, psi, alpha, power)

    if needed(1.0) > n:
        return None
    low, high = 1e-6, 1.0
    for _ in range(60):  # bisection: `needed` falls as delta grows
        mid = (low + high) / 2
        low, high = (mid, high) if needed(mid) > n else (low, mid)
    return high


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None stays None and is not counted).

    Sorted ascending, the i-th smallest of m becomes max over j <= i of min(1, (m - j) * p_j): the
    family-wise error rate is held at alpha whatever the dependence between the tests.
    """
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[index] = running
    return out


def cases_needed(delta: float, discordance: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Paired units needed to detect a difference `delta` in a rate at this power (the inverse of the MDE).

    Connor's formula with the discordant share taken as max(discordance, delta), as in `mde_paired_binary`.
    """
    if not 0 < delta <= 1:
        raise ValueError("the difference must be in (0, 1]")
    return int(np.ceil(_connor_n(delta, discordance, alpha, power) - 1e-9))


def _connor_n(delta: float, discordance: float, alpha: float, power: float) -> float:
    """Connor (1987): pairs needed for a paired-proportion difference `delta`, discordance at least `delta`."""
    z_a, z_b = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)
    eff = min(1.0, max(discordance, delta))
    return float((z_a * eff**0.5 + z_b * max(eff - delta**2, 0.0) ** 0.5) ** 2 / delta**2)
