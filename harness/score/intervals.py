"""Confidence intervals that stay valid when few or no pairs disagree, and the exact paired test.

Every interval here is a score interval: it is the set of parameter values a score test does not reject, so
it never shrinks to a point because a sample happens to show no spread (a percentile bootstrap over cases
does: with no discordant pair every resample has difference 0).

- Rates (one variant): Wilson's score interval (Wilson 1927, JASA 22:209-212) on counts divided by the
  design effect of the clusters (Rao & Scott 1992, Biometrics 48:577-585). Never [0, 0] from a non-empty
  sample: with x = 0 of n the upper bound is z²/(n + z²).
- Paired difference of two proportions: Tango's score interval (Tango 1998, Stat Med 17:891-908; the
  interval recommended by Fagerland, Lydersen & Laake 2014, Stat Med 33:2850-2875). With no discordant pair
  of n it is ±z²/(n + z²): ±43.4 pp at n = 5, ±2.7 pp at n = 136.
- Clusters (several epochs of a case, several claims of a case): Tango's interval on the Rao-Scott adjusted
  counts, the design effect being the ratio of the cluster-robust variance of the paired difference
  (Obuchowski 1998, Stat Med 17:1495-1507; the ratio-estimator variance of clustered matched pairs, also the
  one compared by Yang, Sun & Hardin 2010, J Stat Plan Inference 140:1296-1305) to the variance of
  independent pairs, floored at 1. With one unit per cluster it is 1 and the interval is Tango's exactly.
  With no discordant unit the variance ratio cannot be estimated; the design effect is then the mean cluster
  size, so each case counts once (the interval of a corpus whose units within a case are perfect copies):
  the bounds never collapse for want of discordance.
- The paired test: the exact sign-flip (randomisation) test of the per-cluster differences (Fisher 1935;
  for clustered matched pairs, the permutation form of Obuchowski's test). Under "no difference" each
  cluster's difference is as likely negated; the p-value counts every sign pattern, exactly, by convolution.
  With one unit per cluster it is McNemar's exact test.

All functions are pure, on numbers or numpy arrays; fractions in, fractions out.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

ALPHA = 0.05
MAX_CASES_NEEDED = 1_000_000
"""`cases_for_margin` stops looking here: a margin this many cases cannot show is reported as None."""


def z_of(alpha: float = ALPHA) -> float:
    """The two-sided normal quantile of a (1 - alpha) interval (1.96 at alpha 0.05)."""
    return NormalDist().inv_cdf(1 - alpha / 2)


def wilson_ci(successes: float, n: float, alpha: float = ALPHA) -> tuple[float, float] | None:
    """Wilson's score interval of successes / n (real-valued counts allowed: design-effect adjusted)."""
    if n <= 0:
        return None
    z = z_of(alpha)
    p = min(max(successes / n, 0.0), 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


def rate_design_effect(successes: np.ndarray, units: np.ndarray) -> float:
    """Design effect of a pooled rate over clusters: cluster-robust variance / binomial variance, at least 1.

    The cluster variance is the ratio estimator's, sum((x_i - p m_i)²) / M² (Rao & Scott 1992). With every
    unit alike (p = 0 or 1) the ratio is not estimable: the mean cluster size is taken (each cluster counts
    once), the most the clustering can cost when the cluster sizes are equal.
    """
    x, m = np.asarray(successes, float), np.asarray(units, float)
    total = m.sum()
    p = x.sum() / total
    if m.max() <= 1:  # no unit shares a cluster: the binomial itself
        return 1.0
    if p <= 0 or p >= 1:
        return max(1.0, total / len(m))
    cluster_var = float(np.sum((x - p * m) ** 2)) / total**2
    return max(1.0, cluster_var / (p * (1 - p) / total))


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer `df`: the finite series of Abramowitz & Stegun 26.7.3-4."""
    theta = math.atan(t / math.sqrt(df))
    cos2, sin_t = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:
        term = total = 1.0
        for k in range(2, df, 2):
            term *= cos2 * (k - 1) / k
            total += term
        return sin_t * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = math.cos(theta)
    for k in range(3, df - 1, 2):
        term *= cos2 * (k - 1) / k
        total += term
    return 2 / math.pi * (theta + sin_t * total)


def t_of(alpha: float, df: int) -> float:
    """The two-sided Student t quantile of a (1 - alpha) interval with `df` degrees of freedom (2.262 for 0.05, 9).

    Bisection on the exact series for df <= 200; above that the Cornish-Fisher expansion (A&S 26.7.5), whose error
    there is below 1e-6. Kept here so the scoring path needs no scipy import."""
    z = z_of(alpha)
    if df > 200:
        v = float(df)
        return (
            z
            + (z**3 + z) / (4 * v)
            + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        )
    lo, hi = z, z * 4 + 1 / alpha
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_two_sided(mid, df) < 1 - alpha else (lo, mid)
    return (lo + hi) / 2


def cluster_rate_ci(successes: np.ndarray, units: np.ndarray, alpha: float = ALPHA) -> tuple[float, float] | None:
    """Wilson's interval of sum(x) / sum(m) over clusters, on counts divided by their design effect.

    When clusters hold several units, the effective sample size is also shrunk by (z / t_(k-1))², k clusters:
    Korn & Graubard's degrees-of-freedom adjustment (1998, Survey Methodology 24:193-201), which keeps coverage
    at 10 or 20 cases, where the design effect itself is estimated from few clusters. One unit per cluster is
    plain Wilson (no design effect to estimate)."""
    x, m = np.asarray(successes, float), np.asarray(units, float)
    if len(m) == 0 or m.sum() <= 0:
        return None
    n_eff = m.sum() / rate_design_effect(x, m)
    clusters = int((m > 0).sum())
    if clusters > 1 and m.max() > 1:
        n_eff *= (z_of(alpha) / t_of(alpha, clusters - 1)) ** 2
    return wilson_ci(x.sum() * n_eff / m.sum(), n_eff, alpha)


def _tango_z(b: float, c: float, n: float, delta: float) -> float:
    """Tango's score statistic for H0: p(b) - p(c) = delta (b: candidate-only right, c: control-only right)."""
    a_ = 2 * n
    b_ = -b - c + (2 * n - b + c) * delta
    c_ = -c * delta * (1 - delta)
    q = (math.sqrt(max(b_ * b_ - 4 * a_ * c_, 0.0)) - b_) / (2 * a_)  # restricted MLE of p(c)
    var = n * (2 * q + delta * (1 - delta))
    num = b - c - n * delta
    if var <= 0:
        return 0.0 if abs(num) < 1e-12 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


def tango_ci(b: float, c: float, n: float, alpha: float = ALPHA) -> tuple[float, float] | None:
    """Tango's score interval of the paired difference (b - c) / n: candidate minus control.

    b: pairs only the candidate got right, c: pairs only the control got right, n: all pairs (real-valued
    counts allowed). The bounds are the roots of |Z(delta)| = z, found by bisection (Z falls as delta grows).
    """
    if n <= 0:
        return None
    z = z_of(alpha)
    diff = (b - c) / n

    def root(lo: float, hi: float, target: float) -> float:
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _tango_z(b, c, n, mid) > target else (lo, mid)
        return (lo + hi) / 2

    low = -1.0 if _tango_z(b, c, n, -1.0) <= z else root(-1.0, diff, z)
    high = 1.0 if _tango_z(b, c, n, 1.0) >= -z else root(diff, 1.0, -z)
    return low, high


def paired_design_effect(cand_only: np.ndarray, ctl_only: np.ndarray, units: np.ndarray) -> float:
    """Design effect of a clustered paired difference: Obuchowski's cluster variance over the i.i.d. one, ≥ 1.

    Cluster variance sum((D_i - d m_i)²) / M² with D_i = b_i - c_i; the variance of M independent pairs is
    ((B + C) / M - d²) / M. Without discordance the mean cluster size (see the module's docstring).
    """
    b, c, m = (np.asarray(v, float) for v in (cand_only, ctl_only, units))
    total = m.sum()
    if m.max() <= 1:  # one pair per cluster: independent pairs, Tango's interval itself
        return 1.0
    d = (b.sum() - c.sum()) / total
    iid = ((b.sum() + c.sum()) / total - d * d) / total
    if iid <= 1e-15:
        return max(1.0, total / len(m))
    cluster_var = float(np.sum((b - c - d * m) ** 2)) / total**2
    return max(1.0, cluster_var / iid)


def clustered_paired_ci(
    cand_only: np.ndarray, ctl_only: np.ndarray, units: np.ndarray, alpha: float = ALPHA
) -> tuple[float, float] | None:
    """Tango's interval on Rao-Scott adjusted counts: the paired difference candidate - control over clusters.

    Per cluster: units only the candidate got right, units only the control got right, units in all.
    """
    b, c, m = (np.asarray(v, float) for v in (cand_only, ctl_only, units))
    if len(m) == 0 or m.sum() <= 0:
        return None
    deff = paired_design_effect(b, c, m)
    return tango_ci(b.sum() / deff, c.sum() / deff, m.sum() / deff, alpha)


def sign_flip_p(differences: np.ndarray) -> float:
    """Exact two-sided p of the cluster sign-flip test: P(|sum of ±D_i| >= |sum D_i|), every sign equally likely.

    D_i are the per-cluster integer differences (candidate right minus control right). The null distribution
    is built by convolving each cluster's two signs on the integer grid, so it is exact at any number of
    clusters. With every |D_i| <= 1 it is McNemar's exact test.
    """
    d = np.rint(np.asarray(differences, float)).astype(np.int64)
    d = np.abs(d[d != 0])
    if len(d) == 0:
        return 1.0
    observed = abs(int(np.sum(np.rint(np.asarray(differences, float)))))
    total = int(d.sum())
    dist = np.zeros(2 * total + 1)
    dist[total] = 1.0  # index total is a sum of 0
    for size in d:
        dist = 0.5 * (np.roll(dist, size) + np.roll(dist, -size))  # the support never wraps: |sum| <= total
    sums = np.abs(np.arange(-total, total + 1))
    return float(min(1.0, dist[sums >= observed].sum()))


def equal_sides_bound(
    cases: int, discordance: float, units_per_case: float = 1.0, design_effect: float = 1.0, alpha: float = ALPHA
) -> float:
    """The loss `cases` paired cases can rule out for two sides equal on average: the half-width of the paired
    interval at this discordance (split evenly), z²/(n + z²) with none. The inverse of `cases_for_margin`."""
    n = cases * units_per_case / design_effect
    ci = tango_ci(n * discordance / 2, n * discordance / 2, n, alpha)
    return 1.0 if ci is None else max(ci[1], -ci[0])


def cases_for_margin(
    margin: float,
    discordance: float,
    units_per_case: float = 1.0,
    design_effect: float = 1.0,
    alpha: float = ALPHA,
) -> int | None:
    """Fewest cases whose paired interval, for two sides equal on average, has both bounds within the margin.

    `discordance`: share of units the two sides answer differently (split evenly: no true difference);
    `units_per_case` and `design_effect` as observed. The same interval as every decision
    (`clustered_paired_ci`). None when not even `MAX_CASES_NEEDED` cases would do.
    """
    if margin <= 0:
        return None

    def fits(cases: int) -> bool:
        return equal_sides_bound(cases, discordance, units_per_case, design_effect, alpha) <= margin + 1e-12

    if not fits(MAX_CASES_NEEDED):
        return None
    low, high = 0, 1
    while not fits(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high
