"""Metric functions on frames built by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.score.metrics import claim_details, grounding_details, stability, verdict_details
from harness.score.registry import Frames, compute_all


def claims(rows: list[tuple[str, str, str | None, list[str]]]) -> pd.DataFrame:
    """(case, dataset, predicted, gold) rows."""
    from harness.score.frames import CLASSES, single_gold

    return pd.DataFrame(
        [
            {
                "case_id": c,
                "dataset": d,
                "predicted": p,
                "gold": g,
                "gold_single": single_gold(p, g, CLASSES),
                "correct": p in g,
                "scored": True,
                "epoch": 1,
            }
            for c, d, p, g in rows
        ]
    )


def test_grounding_balanced_accuracy_by_hand() -> None:
    # supported gold: a1 (predicted direct: right), a2 (predicted contradicted: wrong), a3 (inference: right)
    # unsupported gold: b1 (predicted unsupported: right), b2 (predicted direct: wrong), b3..b4 (contradicted: right)
    frame = claims(
        [
            ("a1", "ext", "direct_observation", ["direct_observation", "reasonable_inference"]),
            ("a2", "ext", "contradicted", ["direct_observation", "reasonable_inference"]),
            ("a3", "ext", "reasonable_inference", ["direct_observation", "reasonable_inference"]),
            ("b1", "ext", "unsupported", ["contradicted", "unsupported"]),
            ("b2", "ext", "direct_observation", ["contradicted", "unsupported"]),
            ("b3", "ext", "contradicted", ["contradicted", "unsupported"]),
            ("b4", "own", "contradicted", ["contradicted"]),
        ]
    )
    out = {**compute_all(Frames(pd.DataFrame(), frame)), **grounding_details(frame)}
    # TPR = 2/3, TNR = 3/4 -> balanced accuracy = (2/3 + 3/4) / 2
    assert out["grounding_bacc"] == pytest.approx((2 / 3 + 3 / 4) / 2)
    low, high = out["grounding_bacc_ci"]
    assert low <= out["grounding_bacc"] <= high
    ext = out["grounding_bacc_by_dataset"]["ext"]
    assert ext["grounding_bacc"] == pytest.approx((2 / 3 + 2 / 3) / 2) and ext["claims"] == 6
    assert out["grounding_bacc_by_dataset"]["own"]["grounding_bacc"] is None  # one class only: undefined


def test_claim_metrics_macro_f1_and_kappa() -> None:
    frame = claims(
        [
            ("c1", "d", "direct_observation", ["direct_observation"]),
            ("c2", "d", "contradicted", ["contradicted"]),
            ("c3", "d", "direct_observation", ["contradicted"]),
            ("c4", "d", "overstated", ["reasonable_inference", "overstated"]),
        ]
    )
    out = {**compute_all(Frames(pd.DataFrame(), frame)), **claim_details(frame)}
    assert out["claim_accuracy"] == pytest.approx(3 / 4)
    # classes present: direct (P 1/2, R 1), contradicted (P 1, R 1/2), overstated (P 1, R 1); others 0
    assert out["per_class"]["direct_observation"]["precision"] == pytest.approx(0.5)
    assert out["per_class"]["contradicted"]["recall"] == pytest.approx(0.5)
    f1 = (2 / 3 + 2 / 3 + 1) / 6
    assert out["macro_f1"] == pytest.approx(f1)
    # gold (c1..c4): direct, contradicted, contradicted, overstated; predicted: direct, contradicted, direct,
    # overstated. Observed agreement 3/4; chance (1*2 + 2*1 + 1*1) / 16 = 5/16; kappa = (3/4 - 5/16) / (11/16)
    assert out["cohen_kappa"] == pytest.approx(7 / 11)


def test_verdict_metrics_unsafe_pass() -> None:
    frame = pd.DataFrame(
        [
            {"case_id": "a", "verdict": "PASS", "model_verdict": "PASS", "gold_verdicts": ["REJECT"]},
            {"case_id": "b", "verdict": "LOW_CONFID", "model_verdict": "PASS", "gold_verdicts": ["LOW_CONFID"]},
            {"case_id": "c", "verdict": "PASS", "model_verdict": "PASS", "gold_verdicts": ["PASS", "LOW_CONFID"]},
        ]
    )
    frame["verdict_correct"] = [v in g for v, g in zip(frame["verdict"], frame["gold_verdicts"], strict=True)]
    frame["model_verdict_correct"] = [
        v in g for v, g in zip(frame["model_verdict"], frame["gold_verdicts"], strict=True)
    ]
    frame["unsafe_eligible"] = frame["gold_verdicts"].map(lambda g: "PASS" not in g)
    frame["unsafe_pass"] = frame["unsafe_eligible"] & (frame["verdict"] == "PASS")
    frame["scored"], frame["invalid"], frame["guard_intervened"] = True, False, False
    out = {**compute_all(Frames(frame, pd.DataFrame())), **verdict_details(frame)}
    assert out["verdict_accuracy"] == pytest.approx(2 / 3)
    assert out["model_verdict_accuracy"] == pytest.approx(1 / 3)
    assert out["unsafe_pass_rate"] == pytest.approx(1 / 2)
    assert out["verdict_confusion"]["matrix"][2][0] == 1  # gold REJECT, predicted PASS


def test_stability_classifies_cases_across_epochs() -> None:
    frame = pd.DataFrame(
        [
            {"case_id": cid, "epoch": e, "scored": True, "verdict_correct": ok, "verdict": v, "gold_verdicts": ["PASS"]}
            for cid, e, ok, v in [
                ("s", 1, True, "PASS"),
                ("s", 2, True, "PASS"),
                ("f", 1, True, "PASS"),
                ("f", 2, False, "REJECT"),
                ("w", 1, False, "REJECT"),
                ("w", 2, False, "REJECT"),
            ]
        ]
    )
    out = stability(frame)
    assert (out["stable_right"], out["flaky"], out["stable_wrong"]) == (1, 1, 1)
    assert out["flaky_cases"] == ["f"]
    # majority of f: a tie between PASS and REJECT goes to the more severe REJECT -> wrong
    assert out["majority_verdict_accuracy"] == pytest.approx(1 / 3)
