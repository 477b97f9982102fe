"""Per-variant quality metrics from the frames (classification figures from `score.classification`).

Transport errors (no model reply after every retry) are counted in `errors`
and left out of the rates; an invalid reply is scored as the policy decided.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from harness.score.classification import cohen_kappa, confusion, macro_f1, per_class
from harness.score.frames import CLASSES, SUPPORTED, VERDICTS, single_gold
from harness.score.stats import ratio_ci


def _ratio(
    frame: pd.DataFrame, numerator: str, denominator: str | None = None
) -> tuple[float | None, list[float] | None]:
    if frame.empty:
        return None, None
    per_case = frame.groupby("case_id").agg(
        num=(numerator, "sum"), den=(denominator or numerator, "count" if denominator is None else "sum")
    )
    num, den = per_case["num"].to_numpy(dtype=float), per_case["den"].to_numpy(dtype=float)
    if den.sum() == 0:
        return None, None
    ci = ratio_ci(num, den)
    return float(num.sum() / den.sum()), (list(ci) if ci else None)


def put(out: dict[str, Any], name: str, value: tuple[float | None, list[float] | None]) -> None:
    out[name], out[f"{name}_ci"] = value


def claim_metrics(claims: pd.DataFrame) -> dict[str, Any]:
    """Accuracy, macro-F1, kappa, per-class precision/recall and the confusion matrix over six classes."""
    out: dict[str, Any] = {"claims_scored": len(claims)}
    put(out, "claim_accuracy", _ratio(claims, "correct"))
    if claims.empty:
        out.update(macro_f1=None, cohen_kappa=None, per_class={}, claim_confusion={"labels": CLASSES, "matrix": []})
        return out
    y_true = claims["gold_single"].tolist()
    y_pred = [p if p in CLASSES else "unsupported" for p in claims["predicted"].fillna("unsupported")]
    matrix = confusion(y_true, y_pred, CLASSES)
    out["macro_f1"] = macro_f1(y_true, y_pred, CLASSES)
    out["cohen_kappa"] = _kappa(y_true, y_pred, CLASSES)
    precision, recall, f1, support = per_class(y_true, y_pred, CLASSES)
    out["per_class"] = {
        cls: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
        for cls, p, r, f, s in zip(CLASSES, precision, recall, f1, support, strict=True)
    }
    out["claim_confusion"] = {"labels": CLASSES, "matrix": matrix.tolist()}
    return out


def verdict_metrics(quality: pd.DataFrame) -> dict[str, Any]:
    """Effective and model verdict accuracy, unsafe-pass rate, verdict confusion matrices."""
    out: dict[str, Any] = {}
    put(out, "verdict_accuracy", _ratio(quality, "verdict_correct"))
    put(out, "model_verdict_accuracy", _ratio(quality, "model_verdict_correct"))
    put(out, "unsafe_pass_rate", _ratio(quality[quality["unsafe_eligible"]], "unsafe_pass"))
    out["unsafe_eligible_cases"] = int(quality.loc[quality["unsafe_eligible"], "case_id"].nunique())
    for name, column in (("verdict_confusion", "verdict"), ("model_verdict_confusion", "model_verdict")):
        y_true = [single_gold(p, g, VERDICTS) for p, g in zip(quality[column], quality["gold_verdicts"], strict=True)]
        y_pred = [p if p in VERDICTS else "NONE" for p in quality[column]]
        labels = [*VERDICTS, "NONE"] if "NONE" in y_pred else VERDICTS
        matrix = confusion(y_true, y_pred, labels).tolist() if len(y_true) else []
        out[name] = {"labels": labels, "matrix": matrix}
    return out


def grounding_metrics(claims: pd.DataFrame) -> dict[str, Any]:
    """Binary grounding (supported = direct/inference) balanced accuracy with CI, as LLM-AggreFact reports it."""
    out: dict[str, Any] = {}
    put(out, "grounding_bacc", _bacc(claims))
    out["grounding_bacc_by_dataset"] = {}
    for dataset, group in claims.groupby("dataset"):
        value, ci = _bacc(group)
        out["grounding_bacc_by_dataset"][str(dataset)] = {
            "grounding_bacc": value,
            "grounding_bacc_ci": ci,
            "claims": len(group),
        }
    return out


def _bacc(claims: pd.DataFrame) -> tuple[float | None, list[float] | None]:
    """Balanced accuracy of supported-vs-not, with a case-cluster bootstrap CI."""
    if claims.empty:
        return None, None
    gold_sup = claims["gold"].map(lambda g: bool(set(g) & SUPPORTED)).to_numpy()
    gold_uns = claims["gold"].map(lambda g: bool(set(g) - SUPPORTED)).to_numpy()
    pred_sup = claims["predicted"].isin(SUPPORTED).to_numpy()
    # a claim whose acceptable labels span both sides is right either way; it counts on its predicted side
    pos = gold_sup & (~gold_uns | pred_sup)
    neg = ~pos
    right = np.where(pos, pred_sup, ~pred_sup)
    if not pos.any() or not neg.any():
        return None, None
    frame = pd.DataFrame(
        {"case": claims["case_id"].to_numpy(), "pos": pos, "neg": neg, "tp": right & pos, "tn": right & neg}
    )
    per_case = frame.groupby("case")[["pos", "neg", "tp", "tn"]].sum().to_numpy(dtype=float)
    value = 0.5 * (per_case[:, 2].sum() / per_case[:, 0].sum() + per_case[:, 3].sum() / per_case[:, 1].sum())
    rng = np.random.default_rng(20261130)
    idx = rng.integers(0, len(per_case), size=(2000, len(per_case)))
    sums = per_case[idx].sum(axis=1)
    ok = (sums[:, 0] > 0) & (sums[:, 1] > 0)
    boots = 0.5 * (sums[ok, 2] / sums[ok, 0] + sums[ok, 3] / sums[ok, 1])
    low, high = np.percentile(boots, [2.5, 97.5])
    return float(value), [float(low), float(high)]


def operations_metrics(quality: pd.DataFrame) -> dict[str, Any]:
    """Invalid replies and why, guard interventions, tokens, latency, harness CPU per case."""
    scored = quality[quality["scored"]]
    n = len(scored)
    reasons = scored["invalid_reason"].dropna().value_counts().to_dict()
    latency = quality.loc[quality["scored"] & ~quality["cached"], "latency_ms"]
    return {
        "invalid_reply_rate": float(scored["invalid"].mean()) if n else None,
        "invalid_reasons": {str(k): int(v) for k, v in reasons.items()},
        "guard_intervention_rate": float(scored["guard_intervened"].mean()) if n else None,
        "tokens": {
            "prompt": int(quality["prompt_tokens"].sum()),
            "completion": int(quality["completion_tokens"].sum()),
            "total": int(quality["total_tokens"].sum()),
        },
        "latency_ms": _quantiles(latency),
        # a replayed result carries the CPU of the run that made it, not of this one
        "harness_cpu_ms": _quantiles(quality.loc[~quality["replayed"], "harness_cpu_ms"]),
        "cached_results": int(quality["cached"].sum()),
        "replayed_results": int(quality["replayed"].sum()),
    }


def _quantiles(values: pd.Series) -> dict[str, float | None]:
    if values.empty:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    return {
        "mean": float(values.mean()),
        "p50": float(values.quantile(0.5)),
        "p95": float(values.quantile(0.95)),
        "max": float(values.max()),
    }


def breakdown(quality: pd.DataFrame, claims: pd.DataFrame, column: str) -> dict[str, dict[str, Any]]:
    """Per-scenario or per-tag figures (any metric, grouped, as Inspect's grouped metric does)."""
    out: dict[str, dict[str, Any]] = {}
    exploded = quality[quality["scored"]].explode(column)
    claim_key = (
        claims.merge(exploded[["case_id", "epoch", column]], on=["case_id", "epoch"]) if not claims.empty else claims
    )
    for group, rows in exploded.groupby(column):
        group_claims = (
            claim_key[(claim_key[column] == group) & claim_key["scored"]] if not claim_key.empty else claim_key
        )
        out[str(group)] = {
            "cases": int(rows["case_id"].nunique()),
            "verdict_accuracy": float(rows["verdict_correct"].mean()),
            "model_verdict_accuracy": float(rows["model_verdict_correct"].mean()),
            "claim_accuracy": float(group_claims["correct"].mean()) if len(group_claims) else None,
            "claims": len(group_claims),
        }
    return out


def stability(quality: pd.DataFrame) -> dict[str, Any] | None:
    """With several epochs: stable right / flaky / stable wrong cases and the majority verdict."""
    scored = quality[quality["scored"]]
    if scored.empty or scored["epoch"].nunique() < 2:
        return None
    per_case = scored.groupby("case_id").agg(
        right=("verdict_correct", "sum"), n=("verdict_correct", "count"), verdicts=("verdict", list)
    )
    majority = {cid: _majority(v) for cid, v in per_case["verdicts"].items()}
    gold = scored.groupby("case_id")["gold_verdicts"].first()
    return {
        "stable_right": int((per_case["right"] == per_case["n"]).sum()),
        "flaky": int(((per_case["right"] > 0) & (per_case["right"] < per_case["n"])).sum()),
        "stable_wrong": int((per_case["right"] == 0).sum()),
        "majority_verdict_accuracy": float(np.mean([majority[c] in gold[c] for c in per_case.index])),
        "flaky_cases": sorted(per_case.index[(per_case["right"] > 0) & (per_case["right"] < per_case["n"])].tolist()),
    }


def _majority(verdicts: Iterable[str]) -> str:
    """The most frequent verdict; a tie goes to the more severe one."""
    values = list(verdicts)
    return max(set(values), key=lambda v: (values.count(v), VERDICTS.index(v) if v in VERDICTS else -1))


def _kappa(y_true: list[str], y_pred: list[str], labels: list[str]) -> float | None:
    if len(set(y_true) | set(y_pred)) < 2:
        return None
    value = cohen_kappa(confusion(y_true, y_pred, labels))
    return None if np.isnan(value) else float(value)
