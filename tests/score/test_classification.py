"""The numpy classification figures give scikit-learn's values (the definitions the summary always used)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import (
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_recall_fscore_support,
    roc_auc_score,
)

from harness.score.classification import auroc, cohen_kappa, confusion, macro_f1, per_class

LABELS = ["a", "b", "c", "d"]


@pytest.mark.parametrize("seed", range(6))
def test_figures_match_sklearn_on_random_labels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    y_true = [str(x) for x in rng.choice([*LABELS, "x"], size=n, p=[0.3, 0.3, 0.2, 0.1, 0.1])]  # "x": left out
    y_pred = [str(x) for x in rng.choice(LABELS[: int(rng.integers(1, 5))], size=n)]
    matrix = confusion(y_true, y_pred, LABELS)
    assert matrix.tolist() == confusion_matrix(y_true, y_pred, labels=LABELS).tolist()
    want = precision_recall_fscore_support(y_true, y_pred, labels=LABELS, zero_division=0)
    for got, expected in zip(per_class(y_true, y_pred, LABELS), want, strict=True):
        assert np.allclose(got, expected)
    assert macro_f1(y_true, y_pred, LABELS) == pytest.approx(
        f1_score(y_true, y_pred, labels=LABELS, average="macro", zero_division=0)
    )
    kappa = cohen_kappa_score(y_true, y_pred, labels=LABELS)
    assert (np.isnan(kappa) and np.isnan(cohen_kappa(matrix))) or cohen_kappa(matrix) == pytest.approx(kappa)


def test_kappa_of_perfect_and_of_chance_agreement() -> None:
    assert cohen_kappa(confusion(["a", "b", "a"], ["a", "b", "a"], LABELS)) == pytest.approx(1.0)
    assert np.isnan(cohen_kappa(confusion(["a", "a"], ["a", "a"], LABELS)))  # one class on both sides: undefined


@pytest.mark.parametrize("seed", range(6))
def test_auroc_matches_sklearn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    positive = rng.random(40) < 0.4
    positive[:2] = [True, False]  # both classes present
    score = np.round(rng.random(40), 1)  # many ties
    assert auroc(positive, score) == pytest.approx(roc_auc_score(positive, score))


@pytest.mark.parametrize("seed", range(4))
def test_counts_are_exactly_the_counted_pairs(seed: int) -> None:
    """The counts are made with numpy, not pair by pair: they must be the very counts (summary.json is compared
    byte for byte), with labels outside the list and repeated labels as a pair-by-pair count treats them."""
    rng = np.random.default_rng(seed)
    labels = ["a", "b", "c", "a"] if seed % 2 else LABELS  # a repeated label counts at its last index
    y_true = [str(x) for x in rng.choice([*LABELS, "x"], size=500)]
    y_pred = [str(x) for x in rng.choice(["a", "b", "y"], size=500)]
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    tp, predicted, support = np.zeros(len(labels)), np.zeros(len(labels)), np.zeros(len(labels), dtype=np.int64)
    for truth, pred in zip(y_true, y_pred, strict=True):
        i, j = index.get(truth), index.get(pred)
        if i is not None and j is not None:
            matrix[i, j] += 1
        if j is not None:
            predicted[j] += 1
        if i is not None:
            support[i] += 1
            tp[i] += truth == pred
    assert np.array_equal(confusion(y_true, y_pred, labels), matrix)

    def share(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        return np.divide(num, den, out=np.zeros(len(num)), where=den > 0)

    precision, recall, f1, got_support = per_class(y_true, y_pred, labels)
    assert got_support.dtype == np.int64 and np.array_equal(got_support, support)
    assert np.array_equal(precision, share(tp, predicted)) and np.array_equal(recall, share(tp, support * 1.0))
    assert np.array_equal(f1, share(2 * tp, predicted + support))
    with pytest.raises(ValueError, match="2 true labels but 1 predictions"):
        confusion(["a", "b"], ["a"], labels)
