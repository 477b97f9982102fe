"""Classification figures from a confusion matrix: per-class precision, recall, F1, macro-F1, Cohen's kappa;
Krippendorff's alpha (nominal) from a coincidence matrix, checked against the `krippendorff` package in tests.

The same definitions as scikit-learn's `confusion_matrix`, `precision_recall_fscore_support(zero_division=0)`,
`f1_score(average="macro")` and `cohen_kappa_score` (tests check them against it), in numpy: importing
sklearn.metrics cost every `vbench run` a second (it loads scipy), and its argument validation costs
milliseconds per call, once per variant and group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _indices(values: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """Each value's index in `labels` (its last, if a label repeats), -1 for a value outside them."""
    index = {label: i for i, label in enumerate(labels)}
    return np.fromiter((index.get(v, -1) for v in values), dtype=np.int64, count=len(values))


def _pairs(y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true labels but {len(y_pred)} predictions")
    return _indices(y_true, labels), _indices(y_pred, labels)


def confusion(y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """Counts, rows the true label and columns the predicted one, in `labels` order; pairs outside are left out."""
    truth, pred = _pairs(y_true, y_pred, labels)
    both = (truth >= 0) & (pred >= 0)
    k = len(labels)
    return np.bincount(truth[both] * k + pred[both], minlength=k * k).astype(np.int64).reshape(k, k)


def _share(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (scikit-learn's zero_division=0)."""
    out = np.zeros(len(num), dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out


def per_class(
    y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall, F1 and support of every label (0 where undefined); every pair counts, so a prediction
    of a label against a truth outside `labels` is a false positive, as in scikit-learn."""
    truth, pred = _pairs(y_true, y_pred, labels)
    k = len(labels)
    predicted = np.bincount(pred[pred >= 0], minlength=k).astype(float)
    support = np.bincount(truth[truth >= 0], minlength=k).astype(np.int64)
    tp = np.bincount(truth[(truth >= 0) & (truth == pred)], minlength=k).astype(float)
    precision, recall = _share(tp, predicted), _share(tp, support.astype(float))
    f1 = _share(2 * tp, predicted + support)  # 2tp / (2tp + fp + fn)
    return precision, recall, f1, support


def macro_f1(y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]) -> float:
    """Unweighted mean of the per-class F1 over every label given."""
    return float(per_class(y_true, y_pred, labels)[2].mean()) if len(labels) else 0.0


def cohen_kappa(matrix: np.ndarray) -> float:
    """Cohen's kappa of the two raters in the matrix; nan when chance agreement is total."""
    return float(cohen_kappas(np.asarray(matrix)[None])[0])


def cohen_kappas(matrices: np.ndarray) -> np.ndarray:
    """`cohen_kappa` of each of a stack of matrices (n, k, k) at once (a bootstrap's resamples)."""
    m = np.asarray(matrices, dtype=float)
    total = m.sum(axis=(1, 2))
    rows, cols = m.sum(axis=2), m.sum(axis=1)
    diagonal = np.einsum("nii->n", m)
    agreeing_by_chance = np.einsum("ni,ni->n", rows, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected_off = (total * total - agreeing_by_chance) / total  # off-diagonal mass expected by chance
        out = 1.0 - (total - diagonal) / expected_off
    out[(total == 0) | ~(expected_off > 0)] = np.nan
    return out


def coincidence(units: Sequence[Sequence[str]], labels: Sequence[str]) -> np.ndarray:
    """Krippendorff's coincidence matrix of the units (each the values its coders gave; a unit with fewer than
    two values is not pairable and adds nothing): every ordered pair of values from two coders of a unit adds
    1 / (m_u - 1), m_u the unit's number of values."""
    k = len(labels)
    out = np.zeros((k, k), dtype=float)
    for values in units:
        idx = _indices(values, labels)
        idx = idx[idx >= 0]
        m = len(idx)
        if m < 2:
            continue
        counts = np.bincount(idx, minlength=k).astype(float)
        out += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return out


def krippendorff_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha for nominal data from a coincidence matrix (`coincidence`): 1 - D_o / D_e, with
    D_o the share of disagreeing pairs and D_e the share expected by chance; nan when chance disagreement is 0."""
    return float(krippendorff_alphas(np.asarray(matrix)[None])[0])


def krippendorff_alphas(matrices: np.ndarray) -> np.ndarray:
    """`krippendorff_alpha` of each of a stack of coincidence matrices (n, k, k) at once."""
    m = np.asarray(matrices, dtype=float)
    n = m.sum(axis=(1, 2))
    marginals = m.sum(axis=2)
    observed_off = n - np.einsum("nii->n", m)
    expected_off = n * n - np.einsum("ni,ni->n", marginals, marginals)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (n - 1) * observed_off / expected_off
    out[(n <= 1) | ~(expected_off > 0)] = np.nan
    return out


def auroc(positive: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (scikit-learn's `roc_auc_score`): the Mann-Whitney U over n_pos × n_neg, ties
    counting a half (average ranks). Both classes must be present."""
    positive = np.asarray(positive, dtype=bool)
    _values, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)  # rank of the last of each tied group (1-based)
    ranks = (upper - (counts - 1) / 2.0)[inverse]
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    u = ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))
