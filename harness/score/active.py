"""Active choice of the next session to label: draw probability proportional to the residual uncertainty.

Zrnic & Candès ("Active statistical inference", ICML 2024, arXiv:2403.03208) show that the variance of a
prediction-powered estimate is smallest when a session is labelled with probability proportional to the
standard deviation of its rectifier Y − f given what is known before labelling. Here what is known is the
session's cell (the production verifier's verdict and the judge's verdict); the rectifier's second moment in a
cell is estimated from the sessions already labelled there, shrunk to a prior of PRIOR_VARIANCE with weight
PRIOR_WEIGHT (so an unvisited cell is never ruled out). A cell where a rate's Y and f are known to be 0 (the
unsafe-PASS rate where the production verdict is not PASS) contributes nothing for that rate. One design serves
the rates together: a session's score is sqrt(Σ_rates E[(Y − f)² | cell]) (the allocation that minimises the
sum of the rates' variances), mixed with the uniform draw (share UNIFORM_SHARE) so no weight 1/q grows without
bound (Zrnic & Candès's remedy, their section 3).

Pure functions over numpy arrays, batched on leading axes (the validity study draws for many seeds at once).
"""

from __future__ import annotations

import numpy as np

PRIOR_VARIANCE = 0.25
"""The largest variance of a 0/1 residual: an unvisited cell counts as the most uncertain."""
PRIOR_WEIGHT = 2.0
UNIFORM_SHARE = 0.2


def cell_scores(open_: np.ndarray, squares: np.ndarray, counts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per cell sqrt(Σ_k open[k, c]·E[(Y_k − f_k)² | c] / E[(Y_k − f_k)²]); `open_` (K, C) bools (a rate left
    out of the design is all False), `squares` (..., K, C) sums of squared residuals of the labelled sessions,
    `counts` (..., C) labelled sessions per cell, `sizes` (C,) sessions per cell. Each rate's second moment is
    taken relative to its mean over all sessions, so the design minimises the sum of the rates' variances each
    in units of its variance under uniform choice: a rare rate weighs as much as a common one."""
    second = open_ * (squares + PRIOR_WEIGHT * PRIOR_VARIANCE) / (counts[..., None, :] + PRIOR_WEIGHT)
    mean = (second * sizes).sum(-1, keepdims=True) / sizes.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(mean > 0, second / mean, 0.0)
    return np.sqrt(relative.sum(-2))


def cell_probabilities(sizes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Probability that the next draw falls in each cell, given the sessions left per cell `sizes` (..., C):
    (1 − share)·size·score / Σ size·score + share·size / Σ size. A session's own probability is its cell's
    divided by the cell's size."""
    sizes = np.asarray(sizes, dtype=float)
    left = sizes.sum(-1, keepdims=True)
    mass = sizes * scores
    total = mass.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        active = np.where(total > 0, mass / total, sizes / left)
        uniform = np.where(left > 0, sizes / left, 0.0)
    return (1 - UNIFORM_SHARE) * active + UNIFORM_SHARE * uniform


def session_probabilities(cells: np.ndarray, left: np.ndarray, open_: np.ndarray, squares: np.ndarray,
                          counts: np.ndarray) -> np.ndarray:  # fmt: skip
    """The probability of each session still to label (`left` True) to be drawn next; 0 for the others.
    `cells` (N,) the cell of each session; `open_`, `squares`, `counts` as in `cell_scores`."""
    n_cells = open_.shape[-1]
    sizes = np.bincount(cells[left], minlength=n_cells).astype(float)
    scores = cell_scores(open_, squares, counts, np.bincount(cells, minlength=n_cells).astype(float))
    probs = cell_probabilities(sizes, scores)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(sizes > 0, probs / sizes, 0.0)
    return np.where(left, per[cells], 0.0)
