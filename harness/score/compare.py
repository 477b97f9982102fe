"""Paired comparison of two finished runs, from their per-case outcomes."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.score.outcomes import case_outcomes
from harness.score.wording import format_p
from harness.score.stats import holm, mcnemar_exact, mde_paired_binary, paired_ratio_diff


def variant_pairs(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[str, str]]:
    """Variants of the same name; or, when each run has one variant, those two."""
    names_a, names_b = sorted(set(a["variant"])), sorted(set(b["variant"]))
    shared = [(n, n) for n in names_a if n in names_b]
    if shared:
        return shared
    if len(names_a) == 1 and len(names_b) == 1:
        return [(names_a[0], names_b[0])]
    return []


def compare_outcomes(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """McNemar on verdict correctness and a paired bootstrap on claim accuracy, over shared cases (epoch majority)."""
    return compare_case_outcomes(case_outcomes(a), case_outcomes(b))


def compare_pairs(outcomes: pd.DataFrame, names: Sequence[str]) -> list[dict[str, Any]]:
    """Every pair of the named variants' unit outcomes compared (`compare_outcomes`), Holm-adjusted as one family.

    Each variant's per-case outcomes are made once, not once for every pair it is in.
    """
    per_case = {name: case_outcomes(outcomes[outcomes["variant"] == name]) for name in names}
    return adjust_comparisons(
        [
            {"a": a, "b": b, **compare_case_outcomes(per_case[a], per_case[b])}
            for a, b in itertools.combinations(names, 2)
        ]
    )


def compare_case_outcomes(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """`compare_outcomes` of two variants' per-case outcomes (`case_outcomes`)."""
    a, b = a.set_index("case_id"), b.set_index("case_id")
    common = a.index.intersection(b.index)
    if "case_hash" in a and "case_hash" in b:  # a case whose content changed is not the same case
        common = common[a.loc[common, "case_hash"].to_numpy() == b.loc[common, "case_hash"].to_numpy()]
    unpaired = len(a.index.union(b.index)) - len(common)
    a_right = a.loc[common, "verdict_correct"].to_numpy(dtype=bool)
    b_right = b.loc[common, "verdict_correct"].to_numpy(dtype=bool)
    a_only, b_only, p = mcnemar_exact(a_right, b_right)
    diff, ci, claim_p = paired_ratio_diff(
        a.loc[common, "claims_right"].to_numpy(dtype=float),
        b.loc[common, "claims_right"].to_numpy(dtype=float),
        a.loc[common, "claims_total"].to_numpy(dtype=float),
    )
    vdiff, vci, _ = paired_ratio_diff(a_right.astype(float), b_right.astype(float), np.ones(len(common)))
    return {
        "cases": len(common),
        "unpaired_cases": unpaired,
        "verdict_accuracy_diff": None if np.isnan(vdiff) else vdiff,
        "verdict_accuracy_diff_ci": list(vci) if vci else None,
        "verdict_accuracy_a": float(a_right.mean()) if len(common) else None,
        "verdict_accuracy_b": float(b_right.mean()) if len(common) else None,
        "mcnemar_a_only": a_only,
        "mcnemar_b_only": b_only,
        "mcnemar_p": p,
        # the smallest verdict-accuracy difference these paired cases detect at 80% power (as decisions report it)
        "mde": mde_paired_binary(len(common), a_only + b_only),
        "claim_accuracy_diff": None if np.isnan(diff) else diff,
        "claim_accuracy_diff_ci": list(ci) if ci else None,
        "claim_accuracy_diff_p": claim_p,
    }


def compare_runs(a: pd.DataFrame, b: pd.DataFrame) -> list[dict[str, Any]]:
    return adjust_comparisons(
        [
            {"a": va, "b": vb, **compare_outcomes(a[a["variant"] == va], b[b["variant"] == vb])}
            for va, vb in variant_pairs(a, b)
        ]
    )


def adjust_comparisons(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Holm-adjusted p-values over every comparison of the family, beside the raw ones."""
    for key, raw in (("p_adjusted", "mcnemar_p"), ("claim_accuracy_diff_p_adjusted", "claim_accuracy_diff_p")):
        for row, adjusted in zip(rows, holm([r.get(raw) for r in rows]), strict=True):
            row[key] = adjusted
    return rows


def conclusion(
    row: Mapping[str, Any], alpha: float = 0.05, a_name: str | None = None, b_name: str | None = None
) -> str:
    """One sentence on a comparison, read from the Holm-adjusted p (differences in percentage points)."""
    a, b = a_name or row["a"], b_name or row["b"]
    p = row.get("p_adjusted", row.get("mcnemar_p"))
    diff = row.get("verdict_accuracy_diff")
    if row.get("cases", 0) == 0 or diff is None:
        return f"{a} vs {b}: no case could be paired, so nothing was compared."
    points = f"{abs(diff) * 100:.1f} pp"
    mde = row.get("mde")
    if p is not None and p < alpha and diff != 0:
        better, worse = (a, b) if diff > 0 else (b, a)
        return (
            f"{better} gets significantly more verdicts right than {worse}: {points} on {row['cases']} paired cases "
            f"(Holm-adjusted p {format_p(p)})."
        )
    reach = f"; differences under {mde * 100:.1f} pp could not have been detected" if mde is not None else ""
    return (
        f"{a} vs {b}: no significant difference in verdict accuracy ({points} on {row['cases']} paired cases, "
        f"Holm-adjusted p {format_p(p)}){reach}."
    )
