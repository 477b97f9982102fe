"""The report's analyses as data: pure functions from summary.json parts and the result rows to table rows.

Nothing here formats HTML; the templates and figures read these rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.report.prices import PriceTable, cost_of
from harness.report.signoff import ResultRow
from harness.run.log import RecordSummary
from harness.score.outcome import Outcome
from harness.score.registry import MetricSpec, decidable, metric, metrics
from harness.score.summary_model import Comparison

ALPHA = 0.05


def shown_metrics() -> list[MetricSpec]:
    """Every registered metric, the headline ones first: the report's headline table and summary.md columns."""
    registered = metrics()
    return [m for m in registered if m.headline] + [m for m in registered if not m.headline]


def headline_metrics() -> list[MetricSpec]:
    """The metrics of the headline chart and cards."""
    return [m for m in metrics() if m.headline]


def in_sentence(label: str) -> str:
    """A metric's label inside a sentence: its first letter lower-cased, unless its first word is an acronym."""
    first = label.split(" ", 1)[0]
    return label if first.isupper() else label[:1].lower() + label[1:]


def lead_metric() -> MetricSpec:
    """The first headline metric: the one "the best variant" means where the report needs a single one."""
    return (headline_metrics() or list(metrics()))[0]


def grouped_metrics() -> list[MetricSpec]:
    """The metrics every per-group breakdown shows (per scenario, tag, data set), the first one leading."""
    return [m for m in metrics() if m.grouped]


def decided_metrics() -> list[MetricSpec]:
    """The metrics a ship decision compares candidate and control on: the columns of the decision tables."""
    return [metric(key) for key in decidable()]


# LLM-AggreFact average balanced accuracy (%), as the MiniCheck paper (Tang, Laban, Durrett 2024) reports it.
PUBLISHED_GROUNDING = (("GPT-4", 75.3), ("MiniCheck-FT5", 74.7), ("GPT-3.5", 69.6))
PUBLISHED_SOURCE = (
    "LLM-AggreFact average balanced accuracy reported in the MiniCheck paper (Tang, Laban and Durrett, 2024). "
    "Those figures were measured on other data (the LLM-AggreFact benchmark, grounding documents and claims from "
    "summarisation and RAG data sets), not on this corpus: they give a sense of scale, not a like-for-like comparison."
)


def metric_cell(variant: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {"value": variant.get(key), "ci": variant.get(f"{key}_ci")}


def headline_rows(variants: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant with each headline metric, its 95% CI, and whether it is the best of the variants."""
    best: dict[str, Any] = {}
    shown = shown_metrics()
    for m in shown:
        values: list[float] = [v[m.key] for v in variants if v.get(m.key) is not None]
        if len(values) > 1:
            best[m.key] = max(values) if m.higher_is_better else min(values)
    rows = []
    for v in variants:
        cells = []
        for m in shown:
            cell = metric_cell(v, m.key)
            cell["best"] = m.key in best and cell["value"] == best[m.key]
            cell["percent"] = m.percent
            cells.append(cell)
        rows.append(
            {
                "name": v["name"],
                "model": v.get("model"),
                "prompt": v.get("prompt"),
                "quality_cases": v.get("quality_cases"),
                "errors": v.get("errors"),
                "errors_by_reason": v.get("errors_by_reason") or {},
                "claims_scored": v.get("claims_scored"),
                "cells": cells,
            }
        )
    return rows


CONFUSIONS = (
    ("verdict_confusion", "effective verdict"),
    ("model_verdict_confusion", "model's own verdict"),
    ("claim_confusion", "claim class"),
)


def confusion_table(title: str, labels: Sequence[str], matrix: Sequence[Sequence[int]]) -> dict[str, Any] | None:
    """A confusion matrix as heatmap cells: the count, and its share of the gold row (the colour)."""
    if not matrix:
        return None
    rows: list[dict[str, Any]] = []
    for i, (gold, counts) in enumerate(zip(labels, matrix, strict=True)):
        total = sum(counts)
        cells = [
            {"n": int(n), "share": (n / total) if total else 0.0, "diagonal": i == j, "pred": labels[j]}
            for j, n in enumerate(counts)
        ]
        rows.append({"gold": gold, "total": int(total), "cells": cells})
    right = sum(int(matrix[i][i]) for i in range(len(labels)))
    n = sum(int(sum(counts)) for counts in matrix)
    return {"title": title, "labels": list(labels), "rows": rows, "n": n, "right": right}


def confusion_tables(variants: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per variant: the effective verdict, model verdict and claim class matrices."""
    return [
        {
            "name": v["name"],
            "tables": [
                confusion_table(title, (v.get(key) or {}).get("labels") or [], (v.get(key) or {}).get("matrix") or [])
                for key, title in CONFUSIONS
            ],
        }
        for v in variants
    ]


def comparison_rows(comparisons: Sequence[Comparison], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Paired comparisons with a plain-words reading of McNemar's p and the paired bootstrap CI."""
    if not comparisons:
        return []
    from harness.score.compare import conclusion  # the comparison module loads pandas: only when there are any

    rows = []
    for c in comparisons:
        p, a_only, b_only = c.verdict_p, c.mcnemar_a_only, c.mcnemar_b_only
        significant = p is not None and p < alpha and a_only != b_only
        diff, claim_p = c.claim_accuracy_diff, c.claim_p
        claim_sig = diff is not None and claim_p is not None and claim_p < alpha and diff != 0
        rows.append(
            {
                **c.model_dump(mode="json"),
                "verdict_significant": significant,
                "verdict_better": (c.a if a_only > b_only else c.b) if significant else None,
                "claim_significant": claim_sig,
                "claim_better": (c.a if (diff or 0) > 0 else c.b) if claim_sig else None,
                "conclusion": conclusion(c),
            }
        )
    return rows


def chart_comparisons(
    rows: Sequence[Mapping[str, Any]], variants: Sequence[Mapping[str, Any]], limit: int = 12
) -> tuple[list[Mapping[str, Any]], str | None]:
    """The pairs the comparison chart draws: all of them, or (past `limit`) each variant against the best."""
    if len(rows) <= limit:
        return list(rows), None
    lead = lead_metric()
    scored = [v for v in variants if v.get(lead.key) is not None]
    if not scored:
        return list(rows[:limit]), f"The chart shows the first {limit} of {len(rows)} pairs; the table has them all."
    pick = max if lead.higher_is_better else min
    best = pick(scored, key=lambda v: v[lead.key])["name"]
    picked = [r for r in rows if best in (r["a"], r["b"])]
    return (
        picked,
        f"The chart shows every variant against {best} (the best {in_sentence(lead.label)}); the table has all"
        f" {len(rows)} pairs.",
    )


def breakdown_table(
    variants: Sequence[Mapping[str, Any]], key: str, titles: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """per_scenario, per_tag or per_dataset of every variant as one table: a row per group, a cell per variant
    (the group's figures as summary.json holds them), and the grouped metrics each cell shows. The spread is
    the largest gap between variants in the first grouped metric."""
    names = [v["name"] for v in variants]
    groups = sorted({g for v in variants for g in (v.get(key) or {})})
    shown = grouped_metrics()
    rows = []
    for group in groups:
        cells = [(v.get(key) or {}).get(group) for v in variants]
        accs = [c[shown[0].key] for c in cells if shown and c and c.get(shown[0].key) is not None]
        rows.append(
            {
                "group": group,
                "title": (titles or {}).get(group, group),
                "cells": cells,
                "spread": (max(accs) - min(accs)) if len(accs) > 1 else None,
            }
        )
    return {"variants": names, "metrics": shown, "rows": rows}


def stability_rows(variants: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stable right / flaky / stable wrong per variant (None when the variant ran one epoch)."""
    rows = []
    for v in variants:
        s = v.get("stability")
        rows.append(
            {
                "name": v["name"],
                "stability": s,
                "consistency": v.get("consistency"),
                "flaky_shown": (s or {}).get("flaky_cases", [])[:25],
                "flaky_more": max(0, len((s or {}).get("flaky_cases", [])) - 25),
            }
        )
    return rows


def per_epoch_accuracy(results: Iterable[ResultRow]) -> dict[str, list[tuple[int, float, int]]]:
    """Verdict accuracy of each epoch per variant: (epoch, accuracy, results), over scored quality results."""
    tally: dict[tuple[str, int], list[int]] = {}
    for r in results:
        if r.scored and r.kind == "quality":
            right_n = tally.setdefault((r.variant, r.epoch), [0, 0])
            right_n[0] += r.verdict_correct
            right_n[1] += 1
    out: dict[str, list[tuple[int, float, int]]] = {}
    for (variant, epoch), (right, n) in sorted(tally.items()):
        out.setdefault(variant, []).append((epoch, right / n, n))
    return out


def operations_rows(
    variants: Sequence[Mapping[str, Any]], prices: PriceTable, epochs_by_variant: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    """Tokens, latency, cost (when the price table knows the model), invalid replies, cache hits."""
    rows = []
    for v in variants:
        tokens = v.get("tokens") or {}
        samples = v.get("quality_samples") or 0
        rows.append(
            {
                "name": v["name"],
                "model": v.get("model"),
                "tokens": tokens,
                "tokens_per_result": (tokens.get("total", 0) / samples) if samples else None,
                "latency": v.get("latency_ms") or {},
                "harness_cpu": v.get("harness_cpu_ms") or {},
                "cost": cost_of(str(v.get("model")), tokens, prices),
                "invalid_reply_rate": v.get("invalid_reply_rate"),
                "invalid_reasons": v.get("invalid_reasons") or {},
                "cached_results": v.get("cached_results", 0),
                "replayed_results": v.get("replayed_results", 0),
                "samples": samples,
            }
        )
    return rows


def grounding_rows(variants: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Grounding balanced accuracy overall and per data set, for each variant, with the published figures."""
    datasets = sorted({d for v in variants for d in (v.get("grounding_bacc_by_dataset") or {})})
    rows = []
    for v in variants:
        by = v.get("grounding_bacc_by_dataset") or {}
        rows.append(
            {
                "name": v["name"],
                "overall": metric_cell(v, "grounding_bacc"),
                "datasets": [
                    {"value": (by.get(d) or {}).get("grounding_bacc"), "ci": (by.get(d) or {}).get("grounding_bacc_ci"), "claims": (by.get(d) or {}).get("claims")}
                    for d in datasets
                ],
            }
        )  # fmt: skip
    return {"datasets": datasets, "rows": rows, "published": PUBLISHED_GROUNDING, "source": PUBLISHED_SOURCE}


def record_dict_outcome(record: Mapping[str, Any]) -> Outcome:
    """The outcome of a results record embedded as JSON (the drill-down's): its run-log summary's
    (`RecordSummary`), the stored judgement read with the record's own facts (`facts_of`), as scoring reads it."""
    return RecordSummary.model_validate(record).outcome


def quality_mismatches(record: Mapping[str, Any], outcome: Outcome | None = None) -> list[str]:
    """Why a quality result is wrong: error, verdicts and claim classes against the gold (a record's JSON dict;
    `outcome`: its `record_dict_outcome` when the caller holds it)."""
    out: list[str] = []
    if record.get("error"):
        out.append(f"error: {record['error']}")
        return out
    out += (outcome or record_dict_outcome(record)).mismatches
    if record.get("reply_status") == "invalid":
        out.append(f"the reply was invalid ({record.get('invalid_reason')}) and the policy made it LOW_CONFID")
    return out


MATRIX_LIMIT = 1500


def case_matrix(results: Iterable[ResultRow], names: Sequence[str], limit: int = MATRIX_LIMIT) -> dict[str, Any]:
    """Quality cases × variants: right (every epoch), wrong (every epoch), flipped (epochs disagree) or error.

    Rows whose cells differ between variants come first; past `limit` rows the rest are counted, not shown.
    """
    per: dict[tuple[str, str], list[int]] = {}  # (case, variant) -> [all scored, right, results]
    for r in results:
        if r.kind == "quality":
            cell = per.setdefault((r.case_id, r.variant), [1, 0, 0])
            cell[0] &= r.scored
            cell[1] += r.verdict_correct
            cell[2] += 1
    if not per or not names:
        return {"variants": list(names), "rows": [], "total": 0, "differing": 0}
    cells: dict[str, dict[str, str]] = {}
    for (case_id, variant), (scored, right, n) in per.items():
        state = "error" if not scored else "right" if right == n else "wrong" if right == 0 else "flipped"
        cells.setdefault(case_id, {})[variant] = state
    rows = []
    for case_id in sorted(cells):
        states = [cells[case_id].get(n, "none") for n in names]
        rows.append({"case_id": case_id, "cells": states, "differs": len(set(states)) > 1})
    rows.sort(key=lambda r: not r["differs"])  # stable: differing rows first, each group by case id
    return {
        "variants": list(names),
        "rows": rows[:limit],
        "total": len(rows),
        "differing": sum(r["differs"] for r in rows),
    }
