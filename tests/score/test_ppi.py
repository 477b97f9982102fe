"""PPI++ against the reference implementation `ppi-python` (`ppi_py`): its formulas, transcribed from
`ppi_py/ppi.py` 0.2.3 (ppi_mean_pointestimate, ppi_mean_ci, _calc_lam_glm), always; the package itself when it
is installed (it needs numba and statsmodels, so it is not a dependency of the project)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from harness.score import ppi


def _data(seed: int = 3, n: int = 60, big_n: int = 900) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(float)
    f = np.where(rng.random(n) < 0.8, y, 1 - y)
    f_all = (rng.random(big_n) < 0.32).astype(float)
    return y, f, f_all


def _reference(
    y: np.ndarray, f: np.ndarray, f_all: np.ndarray, alpha: float = 0.05
) -> tuple[float, float, float, float]:
    """ppi_py's mean: λ from the PPI (λ=1) point estimate's gradients, clipped; then the Wald interval."""
    n, big_n = len(y), len(f_all)
    est1 = f_all.mean() + (y - f).mean()
    grads, grads_hat = y - est1, f - est1
    cov = ((grads - grads.mean()) * (grads_hat - grads_hat.mean())).sum() * 2 / n
    var = np.cov(np.concatenate([grads_hat, f_all - est1]))
    lam = float(np.clip(cov / (2 * (1 + n / big_n) * var), 0, 1))
    est = (lam * f_all).mean() + (y - lam * f).mean()
    se = np.sqrt(((lam * f_all).std() / np.sqrt(big_n)) ** 2 + ((y - lam * f).std() / np.sqrt(n)) ** 2)
    z = norm.ppf(1 - alpha / 2)
    return lam, est, est - z * se, est + z * se


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_wald_matches_the_reference_formulas(seed: int) -> None:
    y, f, f_all = _data(seed)
    lam, est, low, high = _reference(y, f, f_all)
    got = ppi.wald_interval(y, f, f_all)
    assert float(got.lam) == pytest.approx(lam, abs=1e-12)
    assert float(got.estimate) == pytest.approx(est, abs=1e-12)
    assert (float(got.low), float(got.high)) == pytest.approx((low, high), abs=1e-12)


def test_matches_ppi_python_itself() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    y, f, f_all = _data(5)
    low, high = ppi_py.ppi_mean_ci(y, f, f_all, alpha=0.05)
    est = ppi_py.ppi_mean_pointestimate(y, f, f_all)
    got = ppi.wald_interval(y, f, f_all)
    assert float(got.estimate) == pytest.approx(float(np.ravel(est)[0]), abs=1e-10)
    assert (float(got.low), float(got.high)) == pytest.approx(
        (float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-10
    )


def test_batched_rows_equal_one_at_a_time() -> None:
    rows = [_data(s) for s in (1, 2)]
    y, f = np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
    f_all = rows[0][2]
    both = ppi.interval(y, f, f_all)
    for i in range(2):
        one = ppi.interval(y[i], f[i], f_all)
        assert float(both.low[i]) == pytest.approx(float(one.low))
        assert float(both.high[i]) == pytest.approx(float(one.high))


def test_human_only_is_agresti_coull() -> None:
    y = np.array([1.0] * 3 + [0.0] * 47)
    got = ppi.interval(y, y, np.zeros(500), lam=0.0)
    z = 1.959963984540054
    n_t = 50 + z * z
    p_t = (3 + z * z / 2) / n_t
    half = z * np.sqrt(p_t * (1 - p_t) / n_t)
    assert (float(got.low), float(got.high)) == pytest.approx((max(p_t - half, 0), p_t + half))
    assert float(got.estimate) == pytest.approx(3 / 50)


def test_no_disagreement_never_collapses_the_interval() -> None:
    """A perfect-looking judge on a rare rate (no disagreement among 50 labels): the Wald interval collapses
    to the judge's share; the small-n interval keeps a width of the order of z²/n."""
    y = np.array([1.0] * 2 + [0.0] * 48)
    f_all = np.r_[np.ones(60), np.zeros(940)]
    wald = ppi.wald_interval(y, y, f_all, lam=1.0)
    small = ppi.interval(y, y, f_all, lam=1.0)
    assert float(wald.high - wald.low) < 0.03
    assert float(small.high - small.low) > 0.05
    assert float(small.low) <= 0.06 <= float(small.high)


def test_sequential_terms_are_unbiased_for_the_population_mean() -> None:
    """Two draws without replacement from four sessions with fixed unequal probabilities: the mean of the
    terms averaged over every ordered pair, weighted by its probability, is the population mean exactly."""
    values = np.array([1.0, 0.0, 3.0, 2.0])
    p = np.array([0.4, 0.1, 0.3, 0.2])
    expected = 0.0
    for i in range(4):
        for j in range(4):
            if i == j:
                continue
            q = np.array([p[i], p[j] / (1 - p[i])])
            terms = ppi.sequential_terms(values[[i, j]], q, 4)
            expected += p[i] * p[j] / (1 - p[i]) * terms.mean()
    assert expected == pytest.approx(values.mean())


def test_labels_for_half_width() -> None:
    z = 1.959963984540054
    assert ppi.labels_for_half_width(0.25, 0.0, 0.05) == int(np.ceil(0.25 / (0.05 / z) ** 2))
    assert ppi.labels_for_half_width(0.25, 0.01, 0.02) is None
    assert ppi.effective_labels(0.2, 0.1, 50) == pytest.approx(100)


def test_the_tuned_interval_is_never_more_variable_than_human_only() -> None:
    """λ minimises the reported interval's own variance, so no sample gets a wider PPI++ interval than its
    human-only one (before the centre's shift): checked over many small samples of a rare rate."""
    rng = np.random.default_rng(11)
    y = (rng.random((2000, 30)) < 0.07).astype(float)
    f = np.where(rng.random((2000, 30)) < 0.7, y, (rng.random((2000, 30)) < 0.3).astype(float))
    f_all = (rng.random(3000) < 0.1).astype(float)
    tuned, human = ppi.interval(y, f, f_all), ppi.interval(y, f, f_all, lam=0.0)
    assert np.all(tuned.variance <= human.variance + 1e-15)
    assert np.any(tuned.lam > 0)
