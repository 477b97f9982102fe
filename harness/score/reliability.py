"""Does a judge agree with itself, and does its groundedness score mean anything?

Consistency (several epochs): pass^k, the share of cases right in every epoch, and the verdict
flip rate, the share of cases whose verdict differs between epochs. Calibration: how well the
model's `groundedness_score` predicts that PASS is the right verdict (AUROC, and the expected
calibration error over ten equal-width bins, with the bins kept for a reliability diagram).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.score.classification import auroc
from harness.score.stats import ratio_ci

ECE_BINS = 10


def consistency_metrics(quality: pd.DataFrame) -> dict[str, Any] | None:
    """pass^k and the verdict flip rate over cases scored in every epoch, with 95% CIs; None for one epoch."""
    scored = quality[quality["scored"]]
    epochs = scored["epoch"].nunique() if not scored.empty else 0
    if epochs < 2:
        return None
    per_case = scored.groupby("case_id").agg(
        n=("epoch", "nunique"), right=("verdict_correct", "sum"), verdicts=("verdict", lambda v: len(set(v)))
    )
    complete = per_case[per_case["n"] == epochs]  # a case with an errored epoch cannot show k-of-k
    if complete.empty:
        return None
    all_right = (complete["right"] == epochs).to_numpy(dtype=float)
    flipped = (complete["verdicts"] > 1).to_numpy(dtype=float)
    ones = np.ones(len(complete))
    return {
        "k": int(epochs),
        "cases": len(complete),
        "pass_k": float(all_right.mean()),
        "pass_k_ci": _ci(all_right, ones),
        "verdict_flip_rate": float(flipped.mean()),
        "verdict_flip_rate_ci": _ci(flipped, ones),
    }


def calibration_metrics(quality: pd.DataFrame) -> dict[str, Any]:
    """AUROC and ECE of the groundedness score for 'PASS is the right verdict'; None where undefined."""
    rows = quality[quality["scored"] & quality["groundedness"].notna()]
    out: dict[str, Any] = {"scored": len(rows), "auroc": None, "ece": None, "bins": []}
    if rows.empty:
        return out
    score = rows["groundedness"].to_numpy(dtype=float).clip(0.0, 1.0)
    pass_right = (~rows["unsafe_eligible"].astype(bool)).to_numpy(dtype=float)  # the outcome's: PASS is right
    if len(set(pass_right)) == 2 and len(set(score)) > 1:
        out["auroc"] = auroc(pass_right.astype(bool), score)
    if len(set(score)) > 1:
        edges = np.linspace(0.0, 1.0, ECE_BINS + 1)
        index = np.clip(np.digitize(score, edges[1:-1], right=True), 0, ECE_BINS - 1)
        ece = 0.0
        for b in range(ECE_BINS):
            mask = index == b
            if mask.any():
                gap = abs(score[mask].mean() - pass_right[mask].mean())
                ece += mask.mean() * gap
                out["bins"].append(
                    {"low": float(edges[b]), "high": float(edges[b + 1]), "n": int(mask.sum()),
                     "mean_score": float(score[mask].mean()), "pass_right": float(pass_right[mask].mean())}
                )  # fmt: skip
        out["ece"] = float(ece)
    return out


def _ci(numerators: np.ndarray, denominators: np.ndarray) -> list[float] | None:
    ci = ratio_ci(numerators, denominators)
    return list(ci) if ci else None
