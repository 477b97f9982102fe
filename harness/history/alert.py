"""An alert rule for a rate that must not rise on main (unsafe PASS, verdict errors), with a known false-alarm rate.

Each recorded run is a look: `k` bad units of `n`. The rule is an e-detector (Shin, Ramdas & Rinaldo 2023,
"E-detectors: a nonparametric framework for sequential change detection", New England J. Statist. Data Sci.
1:229–260), a CUSUM of e-values, built in two steps:

1. **Reference.** The first `reference_runs` looks, pooled (`S` bad of `N`), give an upper bound `u` on the
   reference rate at level `alpha/2`, by inverting the Chernoff lower tail of a sum of independent Bernoulli
   units (`P(S <= m - x) <= exp(-x^2 / 2m)`, m the expected sum; units may have different rates):
   `u = ((sqrt(2L) + sqrt(2L + 4S)) / 2)^2 / N`, `L = log(2/alpha)`.
2. **Detection.** Every later look gives the e-value `e_t = mean_j exp(l_j k_t - n_t u (e^l_j - 1))` over a fixed
   grid of bets `l_j = log(1 + d_j/u)` (rises of `d_j` = 2, 5 and 10 points). While the runs' rate stays at most
   `u`, each term has expectation at most 1 (the Poisson bound on a Bernoulli sum's moment generating function,
   `1 + p(e^l - 1) <= exp(p(e^l - 1))`), so each product of consecutive e-values is a test supermartingale.
   The CUSUM statistic `M_t = e_t max(1, M_{t-1})` is the largest such product ending at `t`; by Ville's
   inequality each product crosses `A` with probability at most `1/A`, and a union over the `horizon` possible
   starts gives at most `horizon / A`. With `A = horizon / (alpha/2)` the alert fires, over `horizon` looks
   of runs equivalent to the reference, with probability at most `alpha/2 + alpha/2 = alpha`.

The bound is anytime-valid within the horizon (any look may be read, no look is planned in advance) and needs no
estimate of the runs' variance; it assumes the units of one run are independent given the corpus, as a judge's
draws are. `python -m harness.history.alert_study` measures the false-alarm rate and the detection delay with
the judge of known skill.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

BETS: tuple[float, ...] = (0.02, 0.05, 0.10)
"""The rises (fractions) the mixture bets on."""


class AlertSettings(BaseModel):
    alpha: float = 0.05
    """The false-alarm probability over `horizon` looks of equivalent runs."""
    horizon: int = 50
    """How many looks the false-alarm bound covers."""
    reference_runs: int = 5
    """The first runs of the series, pooled, are the reference."""


class Look(BaseModel):
    """The rule's state after one recorded run."""

    index: int
    k: int
    n: int
    reference: bool
    e_value: float | None = None
    statistic: float | None = None
    alarm: bool = False


class AlertResult(BaseModel):
    settings: AlertSettings
    reference_rate: float | None
    reference_upper: float | None
    threshold: float
    looks: list[Look]
    first_alarm: int | None
    """Index (0-based, into the series) of the first look that alarmed."""
    note: str = ""


def reference_upper(bad: int, total: int, level: float) -> float:
    """An upper confidence bound, at `level`, on the mean rate of `total` independent 0/1 units that gave `bad`."""
    if total <= 0:
        return 1.0
    two_l = 2.0 * math.log(1.0 / level)
    root = (math.sqrt(two_l) + math.sqrt(two_l + 4.0 * bad)) / 2.0
    return min(1.0, root * root / total)


def e_value(k: int, n: int, u: float, bets: Sequence[float] = BETS) -> float:
    """The mixture e-value of one run (k bad units of n) against 'its rate is at most u'."""
    if n <= 0:
        return 1.0
    if u <= 0.0:  # a reference with no bad unit at all bounded at 0: any bad unit is evidence, none is not
        return math.inf if k > 0 else 1.0
    terms = []
    for d in bets:
        lam = math.log1p(min(d, 1.0) / u)
        terms.append(math.exp(min(700.0, lam * k - n * u * math.expm1(lam))))
    return sum(terms) / len(terms)


def detect(counts: Sequence[tuple[int, int]], settings: AlertSettings | None = None) -> AlertResult:
    """The rule over a series of (bad, units) per run, oldest first."""
    s = settings or AlertSettings()
    threshold = s.horizon / (s.alpha / 2.0)
    r = min(s.reference_runs, len(counts))
    bad, total = sum(k for k, _ in counts[:r]), sum(n for _, n in counts[:r])
    looks = [Look(index=i, k=k, n=n, reference=True) for i, (k, n) in enumerate(counts[:r])]
    if r < s.reference_runs or total == 0:
        note = f"{len(counts)} run(s) recorded; the rule needs {s.reference_runs} reference runs with units first"
        return AlertResult(
            settings=s, reference_rate=bad / total if total else None, reference_upper=None, threshold=threshold,
            looks=looks, first_alarm=None, note=note,
        )  # fmt: skip
    u = reference_upper(bad, total, s.alpha / 2.0)
    statistic, first = 0.0, None
    for i, (k, n) in enumerate(counts[r:], start=r):
        e = e_value(k, n, u)
        statistic = e * max(1.0, statistic)
        alarm = statistic >= threshold
        looks.append(Look(index=i, k=k, n=n, reference=False, e_value=e, statistic=statistic, alarm=alarm))
        if alarm and first is None:
            first = i
    beyond = len(counts) - r - s.horizon
    note = f"the false-alarm bound covers {s.horizon} looks; {beyond} more were read" if beyond > 0 else ""
    return AlertResult(
        settings=s, reference_rate=bad / total, reference_upper=u, threshold=threshold, looks=looks,
        first_alarm=first, note=note,
    )  # fmt: skip
