"""Consistency across epochs and calibration of the groundedness score, on hand-built frames."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.run.outcome import pass_allowed
from harness.score.reliability import calibration_metrics, consistency_metrics


def frame(rows: list[tuple[str, int, bool, str, float | None, list[str]]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "case_id": c,
                "epoch": e,
                "scored": True,
                "verdict_correct": ok,
                "verdict": v,
                "groundedness": g,
                "gold_verdicts": gold,
                "unsafe_eligible": not pass_allowed(gold),  # the outcome's column, as the quality frame has it
            }
            for c, e, ok, v, g, gold in rows
        ]
    )


def test_pass_k_and_the_flip_rate_by_hand() -> None:
    rows = []
    for case, verdicts, right in (
        ("a", "PPP", (1, 1, 1)),
        ("b", "PRP", (1, 0, 1)),
        ("c", "RRR", (0, 0, 0)),
        ("d", "PPL", (1, 1, 0)),
    ):
        rows += [(case, e + 1, bool(right[e]), verdicts[e], None, ["PASS"]) for e in range(3)]
    c = consistency_metrics(frame(rows))
    assert (c["k"], c["cases"]) == (3, 4)
    assert c["pass_k"] == pytest.approx(1 / 4)  # only a is right in all three epochs
    assert c["verdict_flip_rate"] == pytest.approx(2 / 4)  # b and d change verdict
    assert c["pass_k_ci"][0] <= 0.25 <= c["pass_k_ci"][1]
    assert consistency_metrics(frame([("a", 1, True, "P", None, ["PASS"])])) is None  # one epoch: not measured


def test_calibration_by_hand() -> None:
    # scores 0.9 and 0.8 on PASS cases, 0.1 and 0.2 on the others: a perfect ranking
    rows = [("a", 1, True, "P", 0.9, ["PASS"]), ("b", 1, True, "P", 0.8, ["PASS"]),
            ("c", 1, True, "R", 0.1, ["REJECT"]), ("d", 1, True, "R", 0.2, ["REJECT"])]  # fmt: skip
    cal = calibration_metrics(frame(rows))
    assert cal["auroc"] == 1.0
    # four bins, one case each: |0.9-1| + |0.8-1| + |0.1-0| + |0.2-0|, each weighted 1/4
    assert cal["ece"] == pytest.approx((0.1 + 0.2 + 0.1 + 0.2) / 4)
    assert [b["n"] for b in cal["bins"]] == [1, 1, 1, 1]
    flat = calibration_metrics(frame([(r[0], 1, True, r[3], 0.5, r[5]) for r in rows]))
    assert flat["auroc"] is None and flat["ece"] is None  # every score the same: undefined
    none = calibration_metrics(frame([(r[0], 1, True, r[3], None, r[5]) for r in rows]))
    assert none == {"scored": 0, "auroc": None, "ece": None, "bins": []}
