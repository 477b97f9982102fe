"""Classification figures from a confusion matrix: per-class precision, recall, F1, macro-F1, Cohen's kappa.

The same definitions as scikit-learn's `confusion_matrix`, `precision_recall_fscore_support(zero_division=0)`,
`f1_score(average="macro")` and `cohen_kappa_score` (tests check them against it), in numpy: importing
sklearn.metrics cost every `vbench run` a second (it loads scipy), and its argument validation costs
milliseconds per call, once per variant and group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def confusion(y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """Counts, rows the true label and columns the predicted one, in `labels` order; pairs outside are left out."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for truth, pred in zip(y_true, y_pred, strict=True):
        i, j = index.get(truth), index.get(pred)
        if i is not None and j is not None:
            matrix[i, j] += 1
    return matrix


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
    index = {label: i for i, label in enumerate(labels)}
    tp, predicted, support = np.zeros(len(labels)), np.zeros(len(labels)), np.zeros(len(labels), dtype=np.int64)
    for truth, pred in zip(y_true, y_pred, strict=True):
        i, j = index.get(truth), index.get(pred)
        if j is not None:
            predicted[j] += 1
        if i is not None:
            support[i] += 1
            tp[i] += truth == pred
    precision, recall = _share(tp, predicted), _share(tp, support.astype(float))
    f1 = _share(2 * tp, predicted + support)  # 2tp / (2tp + fp + fn)
    return precision, recall, f1, support


def macro_f1(y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]) -> float:
    """Unweighted mean of the per-class F1 over every label given."""
    return float(per_class(y_true, y_pred, labels)[2].mean()) if len(labels) else 0.0


def cohen_kappa(matrix: np.ndarray) -> float:
    """Cohen's kappa of the two raters in the matrix; nan when chance agreement is total."""
    total = matrix.sum()
    if total == 0:
        return float("nan")
    expected = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)) / total
    off = 1 - np.eye(len(matrix))
    denominator = float((off * expected).sum())
    if denominator == 0:
        return float("nan")
    return 1.0 - float((off * matrix).sum()) / denominator


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
