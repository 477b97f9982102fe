"""Prediction-powered estimates of a mean over all imported sessions: few human labels, a judge on every session.

A judge (any run over the sessions) gives a prediction f on all N sessions; people label n of them (Y). The
PPI++ estimate (Angelopoulos, Duchi & Zrnic 2023, "PPI++: efficient prediction-powered inference",
arXiv:2311.01453; PPI: Angelopoulos et al. 2023, Science 382:669-674) is

    θ̂ = λ·mean_N(f) + mean_n(Y − λ f),

unbiased for every λ because the labelled sessions are a random sample: the judge's bias is measured on them
and taken out (the rectifier). λ = Cov(Y, f) / ((1 + n/N)·Var(f)), clipped to [0, 1] (power tuning): 0 when the
judge tells nothing (the human-only mean), 1 when it is as good as the labels. `wald_interval` is the reference
implementation's interval with that λ (`ppi_py.ppi_mean_ci`, tests check both against it); `interval` tunes λ
for its own variance, pseudo-observations included, which keeps it at or under the human-only width and shrinks
λ toward 0 when labels are few (tuning λ on the same labels otherwise pulls the estimate toward the judge).

Sessions chosen with unequal probability (active choice, Zrnic & Candès 2024, "Active statistical inference",
ICML, arXiv:2403.03208) are drawn one at a time without replacement, draw j taking its session with a recorded
probability q_j; `sequential_terms` turns their Y and f into per-draw terms (Des Raj 1956) that take the place
of Y and f below. Each term is unbiased given the draws before it, so the estimate stays unbiased whatever the
design, also when q adapts to the labels already given, and the terms' spread gives its variance.

The interval the tools report (`interval`) holds at small n for rare rates, where the Wald interval fails (a
7% rate at 50 labels: few or no disagreements, a variance estimated near 0): z²/4 pseudo-observations are added
at each corner (Y, f) ∈ {0, 1}² of the labelled sample and the Wald interval is taken around the augmented
estimate. With λ = 0 this is exactly the Agresti–Coull interval ("add two successes and two failures", Agresti &
Coull 1998, Am Stat 52:119-126; recommended for n ≥ 40 by Brown, Cai & DasGupta 2001, Stat Sci 16:101-133); with
λ = 1 and binary Y and f it is the matched-pairs adjustment of Agresti & Min 2005 (Stat Med 24:729-740) with
z²/4 in place of 1/2 per cell. Its use on PPI rectifiers is this project's construction: its coverage is
measured by the validity study (`harness.validity.estimate`), not assumed.

All functions are pure over numpy arrays; the trailing axis holds the sessions, leading axes are batches (the
validity study evaluates thousands of samples at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.score.intervals import ALPHA, z_of

MAX_LABELS_NEEDED = 10_000_000


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its interval; batched fields are arrays over the leading axes."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lam: np.ndarray
    variance: np.ndarray
    """The estimate's variance (per label, `rectifier_variance`, divided by the labels, plus the judge part)."""
    rectifier_variance: np.ndarray
    """The variance of one label's rectifier Y − λf: what `labels_for_half_width` needs."""
    judge_variance: np.ndarray
    """λ²·Var(f)/N: the part of the variance no number of labels removes."""


def power_lambda(y: np.ndarray, f: np.ndarray, f_all: np.ndarray) -> np.ndarray:
    """The variance-minimising λ in [0, 1]: Cov(Y, f) / ((1 + n/N)·Var(f)), as `ppi_py`'s `_calc_lam_glm`
    for a mean (its covariance over n, the variance of f over the labelled and all sessions together)."""
    n, big_n = y.shape[-1], f_all.shape[-1]
    cov = ((y - y.mean(-1, keepdims=True)) * (f - f.mean(-1, keepdims=True))).sum(-1) / n
    pooled = np.concatenate([f, np.broadcast_to(f_all, (*f.shape[:-1], big_n))], axis=-1)
    var_f = pooled.var(-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var_f > 0, cov / ((1 + n / big_n) * var_f), 0.0)
    return np.clip(lam, 0.0, 1.0)


def point_estimate(y: np.ndarray, f: np.ndarray, f_all: np.ndarray, lam: np.ndarray | float) -> np.ndarray:
    """λ·mean_N(f) + mean_n(Y − λf)."""
    lam = np.asarray(lam, dtype=float)
    return lam * f_all.mean(-1) + (y - lam[..., None] * f).mean(-1)


def _lambda(y: np.ndarray, f: np.ndarray, f_all: np.ndarray, lam: np.ndarray | float | None) -> np.ndarray:
    """The λ given, broadcast over the batch, or the power-tuned one."""
    if lam is None:
        return power_lambda(y, f, f_all)
    return np.broadcast_to(np.asarray(lam, dtype=float), y.shape[:-1])


def _augmented_lambda(y: np.ndarray, f: np.ndarray, f_all: np.ndarray, c: float, scale: float) -> np.ndarray:
    """The λ in [0, 1] minimising Var(Y − λf)/m + λ²·Var(f)/N over the labels and the pseudo-observations (weight
    c at each corner, m = n + 4c): Cov(Y, f) / (Var(f) + (m/N)·Var_N(f)). The corners are uncorrelated, so with
    few labels λ leans toward 0, the human-only estimate."""
    n, big_n = y.shape[-1], f_all.shape[-1]
    m = n + 4 * c
    yc, fc = scale * np.array([0.0, 1.0, 0.0, 1.0]), scale * np.array([0.0, 0.0, 1.0, 1.0])
    mean_y = (y.sum(-1) + c * yc.sum()) / m
    mean_f = (f.sum(-1) + c * fc.sum()) / m
    cov = ((y * f).sum(-1) + c * (yc * fc).sum()) / m - mean_y * mean_f
    var_f = ((f * f).sum(-1) + c * (fc * fc).sum()) / m - mean_f**2
    denominator = var_f + (m / big_n) * f_all.var(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(denominator > 0, cov / denominator, 0.0)
    return np.clip(lam, 0.0, 1.0)


def wald_interval(
    y: np.ndarray, f: np.ndarray, f_all: np.ndarray, lam: np.ndarray | float | None = None, alpha: float = ALPHA
) -> MeanEstimate:
    """The reference implementation's interval: estimate ± z·sqrt(Var(λf)/N + Var(Y − λf)/n) (population
    standard deviations, as `ppi_py.ppi_mean_ci`)."""
    lam_ = _lambda(y, f, f_all, lam)
    est = point_estimate(y, f, f_all, lam_)
    rect = (y - lam_[..., None] * f).var(-1)
    judge = lam_**2 * f_all.var(-1)
    var = judge / f_all.shape[-1] + rect / y.shape[-1]
    half = z_of(alpha) * np.sqrt(var)
    return MeanEstimate(est, est - half, est + half, lam_, var, rect, judge / f_all.shape[-1])


def interval(
    y: np.ndarray,
    f: np.ndarray,
    f_all: np.ndarray,
    lam: np.ndarray | float | None = None,
    alpha: float = ALPHA,
    scale: float = 1.0,
) -> MeanEstimate:
    """The PPI++ estimate with the small-n interval of the module's docstring (pseudo-observations at the
    corners (Y, f) ∈ {0, scale}²; `scale` is the largest value Y and f take). `lam=0` gives the human-only
    estimate and its Agresti–Coull interval. λ, unless given, minimises this interval's own variance (so it is
    never wider than the human-only one, λ = 0, but for the shift of its centre)."""
    n, big_n = y.shape[-1], f_all.shape[-1]
    z = z_of(alpha)
    c = z * z / 4
    lam_ = _augmented_lambda(y, f, f_all, c, scale) if lam is None else _lambda(y, f, f_all, lam)
    est = point_estimate(y, f, f_all, lam_)
    terms = y - lam_[..., None] * f
    # Y − λf at the corners (0, 0), (1, 0), (0, 1), (1, 1), each with weight 1
    corner_terms = scale * np.stack([np.zeros_like(lam_), np.ones_like(lam_), -lam_, 1.0 - lam_], axis=-1)
    m = n + 4 * c
    mean = (terms.sum(-1) + c * corner_terms.sum(-1)) / m
    second = ((terms**2).sum(-1) + c * (corner_terms**2).sum(-1)) / m
    rect = np.maximum(second - mean**2, 0.0)
    judge = lam_**2 * f_all.var(-1) / big_n
    var = rect / m + judge
    centre = lam_ * f_all.mean(-1) + mean
    half = z * np.sqrt(var)
    # the shifted centre must not leave the estimate outside (at p̂ = 1 Wilson's bound is 1, as here)
    low = np.minimum(np.maximum(centre - half, 0.0), est)
    high = np.maximum(np.minimum(centre + half, scale), est)
    return MeanEstimate(est, low, high, lam_, var, rect, judge)


def sequential_terms(values: np.ndarray, q: np.ndarray, big_n: int) -> np.ndarray:
    """Per-draw terms of sessions drawn one at a time without replacement, draw j taking its session with
    probability q_j among those left (q may adapt to the labels already given): (Σ_{i<j} v_i + v_j/q_j) / N, each
    unbiased for the mean of v over all N sessions given the draws before it (Des Raj 1956, Sankhyā 17:197-208).
    Their mean is the estimate and their spread its variance, so they take the place of Y (and of f) above."""
    before = np.cumsum(values, axis=-1) - values
    return (before + values / q) / big_n


def labels_for_half_width(
    rectifier_variance: float, judge_variance: float, half_width: float, alpha: float = ALPHA
) -> int | None:
    """Labels (draws) in all for a half-width of `half_width`: the n with z·sqrt(σ²_R/n + judge part) ≤ it;
    None when the judge part alone is wider (more labels of this kind cannot get there)."""
    room = (half_width / z_of(alpha)) ** 2 - judge_variance
    if room <= 0:
        return None
    need = math.ceil(rectifier_variance / room)
    return need if need <= MAX_LABELS_NEEDED else None


def effective_labels(human_variance: float, ppi_variance: float, n: int) -> float | None:
    """How many human labels alone would give the PPI estimate's variance: n·Var(human) / Var(PPI)."""
    if ppi_variance <= 0 or human_variance <= 0:
        return None
    return n * human_variance / ppi_variance
