"""The active design: a rate closed in a cell adds nothing there; probabilities sum to one over what is left."""

from __future__ import annotations

import numpy as np
import pytest

from harness.score import active


def test_closed_rate_adds_nothing_and_uncertain_cells_weigh_more() -> None:
    open_ = np.array([[True, True], [True, False]])
    squares = np.array([[0.0, 0.0], [0.0, 0.0]])
    counts = np.array([0.0, 0.0])
    scores = active.cell_scores(open_, squares, counts, np.array([10.0, 10.0]))
    assert scores[0] > scores[1]  # cell 0 is open for both rates
    quiet = active.cell_scores(open_[:1], np.array([[0.0, 20.0]]), np.array([20.0, 20.0]), np.array([10.0, 10.0]))
    assert quiet[1] > quiet[0]  # residuals seen in cell 1, none in cell 0


def test_session_probabilities_sum_to_one_over_the_sessions_left() -> None:
    cells = np.array([0, 0, 1, 1, 1])
    left = np.array([True, False, True, True, True])
    probs = active.session_probabilities(cells, left, np.ones((1, 2), bool), np.zeros((1, 2)), np.zeros(2))
    assert probs.sum() == pytest.approx(1.0)
    assert probs[1] == 0.0
    assert probs[2] == probs[3] == probs[4]
    assert probs.min() >= 0 and (probs[left] > 0).all()
