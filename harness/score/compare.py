"""Paired comparison of two finished runs, from their per-case outcomes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.score.outcomes import case_outcomes
from harness.score.stats import mcnemar_exact, paired_ratio_diff


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
    a, b = case_outcomes(a).set_index("case_id"), case_outcomes(b).set_index("case_id")
    common = a.index.intersection(b.index)
    if "case_hash" in a and "case_hash" in b:  # a case whose content changed is not the same case
        common = common[a.loc[common, "case_hash"].to_numpy() == b.loc[common, "case_hash"].to_numpy()]
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
        "verdict_accuracy_diff": None if np.isnan(vdiff) else vdiff,
        "verdict_accuracy_diff_ci": list(vci) if vci else None,
        "verdict_accuracy_a": float(a_right.mean()) if len(common) else None,
        "verdict_accuracy_b": float(b_right.mean()) if len(common) else None,
        "mcnemar_a_only": a_only,
        "mcnemar_b_only": b_only,
        "mcnemar_p": p,
        "claim_accuracy_diff": None if np.isnan(diff) else diff,
        "claim_accuracy_diff_ci": list(ci) if ci else None,
        "claim_accuracy_diff_p": claim_p,
    }


def compare_runs(a: pd.DataFrame, b: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {"a": va, "b": vb, **compare_outcomes(a[a["variant"] == va], b[b["variant"] == vb])}
        for va, vb in variant_pairs(a, b)
    ]
