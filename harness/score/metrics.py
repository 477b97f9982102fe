"""Per-variant quality metrics from the frames (classification figures from `score.classification`).

The scalar figures are the registered metrics (`harness.score.registry`), one function each here;
the rest (confusion matrices, per-class figures, tokens, latency) are the details beside them.

Transport errors (no model reply after every retry) are counted in `errors`
and left out of the rates; an invalid reply is scored as the policy decided.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from harness.run.outcome import verdict_right
from harness.score import classification
from harness.score.frames import CLASSES, SUPPORTED, VERDICTS, single_gold
from harness.score.registry import Frames, Value, compute_grouped
from harness.score.stats import ratio_ci, resampled_sums


def _ratio(frame: pd.DataFrame, numerator: str, with_ci: bool = True) -> tuple[float | None, list[float] | None]:
    """Share of rows where `numerator` holds, with its case-clustered Wilson CI when asked (`stats.ratio_ci`)."""
    if frame.empty:
        return None, None
    if not with_ci:  # the same division as below (integer sums are exact), without grouping by case
        count = int(frame[numerator].count())
        return (float(frame[numerator].sum()) / float(count) if count else None), None
    per_case = frame.groupby("case_id").agg(num=(numerator, "sum"), den=(numerator, "count"))
    num, den = per_case["num"].to_numpy(dtype=float), per_case["den"].to_numpy(dtype=float)
    if den.sum() == 0:
        return None, None
    ci = ratio_ci(num, den) if with_ci else None
    return float(num.sum() / den.sum()), (list(ci) if ci else None)


def _score(claims: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(gold, predicted) single labels of scored claims; a missing prediction counts as unsupported."""
    y_true = claims["gold_single"].tolist()
    # as Python lists first: iterating a pandas string column element by element is several times slower
    y_pred = [p if p in CLASSES else "unsupported" for p in claims["predicted"].fillna("unsupported").tolist()]
    return y_true, y_pred


def _scored(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["scored"]] if len(frame) and not frame["scored"].all() else frame


# --- the registered metrics (harness.score.registry): each (frames, with_ci) -> Value ---------------------


def _value(result: tuple[float | None, list[float] | None], with_ci: bool) -> Value:
    return Value(result[0], result[1] if with_ci else None)


def claim_accuracy(frames: Frames, with_ci: bool) -> Value:
    return _value(_ratio(_scored(frames.claims), "correct", with_ci=with_ci), with_ci)


def verdict_accuracy(frames: Frames, with_ci: bool) -> Value:
    return _value(_ratio(_scored(frames.quality), "verdict_correct", with_ci=with_ci), with_ci)


def model_verdict_accuracy(frames: Frames, with_ci: bool) -> Value:
    return _value(_ratio(_scored(frames.quality), "model_verdict_correct", with_ci=with_ci), with_ci)


def unsafe_pass_rate(frames: Frames, with_ci: bool) -> Value:
    quality = _scored(frames.quality)
    if quality.empty:
        return Value(None)
    return _value(_ratio(quality[quality["unsafe_eligible"]], "unsafe_pass", with_ci=with_ci), with_ci)


def grounding_bacc(frames: Frames, with_ci: bool) -> Value:
    return _value(_bacc(_scored(frames.claims), with_ci), with_ci)


def macro_f1(frames: Frames, with_ci: bool) -> Value:
    claims = _scored(frames.claims)
    if claims.empty:
        return Value(None)
    y_true, y_pred = _score(claims)
    return Value(classification.macro_f1(y_true, y_pred, CLASSES))


def cohen_kappa(frames: Frames, with_ci: bool) -> Value:
    claims = _scored(frames.claims)
    return Value(None) if claims.empty else Value(_kappa(*_score(claims), CLASSES))


def invalid_reply_rate(frames: Frames, with_ci: bool) -> Value:
    scored = _scored(frames.quality)
    return Value(float(scored["invalid"].mean()) if len(scored) else None)


def guard_intervention_rate(frames: Frames, with_ci: bool) -> Value:
    scored = _scored(frames.quality)
    return Value(float(scored["guard_intervened"].mean()) if len(scored) else None)


# --- the details beside the registered figures ---------------------------------------------------------


def claim_details(claims: pd.DataFrame) -> dict[str, Any]:
    """Per-class precision/recall and the confusion matrix over six classes (scored claims)."""
    out: dict[str, Any] = {"claims_scored": len(claims)}
    if claims.empty:
        out.update(per_class={}, claim_confusion={"labels": CLASSES, "matrix": []})
        return out
    y_true, y_pred = _score(claims)
    precision, recall, f1, support = classification.per_class(y_true, y_pred, CLASSES)
    out["per_class"] = {
        cls: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
        for cls, p, r, f, s in zip(CLASSES, precision, recall, f1, support, strict=True)
    }
    out["claim_confusion"] = {"labels": CLASSES, "matrix": classification.confusion(y_true, y_pred, CLASSES).tolist()}
    return out


def verdict_details(quality: pd.DataFrame) -> dict[str, Any]:
    """Unsafe-eligible case count and the verdict confusion matrices (scored quality results)."""
    out: dict[str, Any] = {"unsafe_eligible_cases": int(quality.loc[quality["unsafe_eligible"], "case_id"].nunique())}
    for name, column in (("verdict_confusion", "verdict"), ("model_verdict_confusion", "model_verdict")):
        answers = quality[column].tolist()
        y_true = [single_gold(p, g, VERDICTS) for p, g in zip(answers, quality["gold_verdicts"].tolist(), strict=True)]
        y_pred = [p if p in VERDICTS else "NONE" for p in answers]
        labels = [*VERDICTS, "NONE"] if "NONE" in y_pred else VERDICTS
        matrix = classification.confusion(y_true, y_pred, labels).tolist() if len(y_true) else []
        out[name] = {"labels": labels, "matrix": matrix}
    return out


def grounding_details(claims: pd.DataFrame) -> dict[str, Any]:
    """Grounding balanced accuracy per data set, with CI (scored claims), as LLM-AggreFact reports it."""
    by_dataset = {}
    for dataset, group in claims.groupby("dataset"):
        value, ci = _bacc(group)
        by_dataset[str(dataset)] = {"grounding_bacc": value, "grounding_bacc_ci": ci, "claims": len(group)}
    return {"grounding_bacc_by_dataset": by_dataset}


def _bacc(claims: pd.DataFrame, with_ci: bool = True) -> tuple[float | None, list[float] | None]:
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
    if not with_ci:
        return float(value), None
    sums = resampled_sums(per_case)
    ok = (sums[:, 0] > 0) & (sums[:, 1] > 0)
    boots = 0.5 * (sums[ok, 2] / sums[ok, 0] + sums[ok, 3] / sums[ok, 1])
    low, high = np.percentile(boots, [2.5, 97.5])
    return float(value), [float(low), float(high)]


def operations_details(quality: pd.DataFrame) -> dict[str, Any]:
    """Why replies were invalid, tokens, latency, harness CPU per case (all quality results)."""
    scored = quality[quality["scored"]]
    reasons = scored["invalid_reason"].dropna().value_counts().to_dict()
    latency = quality.loc[quality["scored"] & ~quality["cached"], "latency_ms"]
    return {
        "invalid_reasons": {str(k): int(v) for k, v in reasons.items()},
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
    """Per-scenario or per-tag figures: every metric registered as `grouped`, as Inspect's grouped metric does."""
    out: dict[str, dict[str, Any]] = {}
    exploded = quality[quality["scored"]].explode(column)
    scored_claims = claims[claims["scored"]].reset_index(drop=True) if not claims.empty else claims
    # each group's scored claims picked by its results' (case, epoch), in frame order: no claims × groups frame
    # is made (a run's scenarios are many per case, and that frame grew with them)
    at = scored_claims.groupby(["case_id", "epoch"], sort=False).indices if not scored_claims.empty else {}
    for group, rows in exploded.groupby(column):
        if claims.empty:
            group_claims = claims
        else:
            found = [at[key] for key in zip(rows["case_id"].tolist(), rows["epoch"].tolist(), strict=True) if key in at]
            picked = np.sort(np.concatenate(found), kind="stable") if found else np.empty(0, dtype=np.int64)
            group_claims = scored_claims.iloc[picked].reset_index(drop=True)
        out[str(group)] = {
            "cases": int(rows["case_id"].nunique()),
            **compute_grouped(Frames(rows, group_claims)),
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
        "majority_verdict_accuracy": float(np.mean([verdict_right(majority[c], gold[c]) for c in per_case.index])),
        "flaky_cases": sorted(per_case.index[(per_case["right"] > 0) & (per_case["right"] < per_case["n"])].tolist()),
    }


def _majority(verdicts: Iterable[str]) -> str:
    """The most frequent verdict; a tie goes to the more severe one."""
    values = list(verdicts)
    return max(set(values), key=lambda v: (values.count(v), VERDICTS.index(v) if v in VERDICTS else -1))


def _kappa(y_true: list[str], y_pred: list[str], labels: list[str]) -> float | None:
    if len(set(y_true) | set(y_pred)) < 2:
        return None
    value = classification.cohen_kappa(classification.confusion(y_true, y_pred, labels))
    return None if np.isnan(value) else float(value)
