"""Paired comparison of variants: each pair is a ship decision of the second (B) against the first (A).

`summary.comparisons[]` and `vbench compare` ask the question a decision answers, so they are made by the
decision itself (`harness.score.decide.decide`): the same pairing unit (case × epoch, clustered by case),
the same interval and test, the same outcome and the same sentence. The rows keep the figures older
summaries held (differences A − B, McNemar counts, Holm-adjusted p over the family), filled from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from harness.score.decide import DEFAULT_GATED, DEFAULT_MARGIN, Decision, MetricComparison, decide, decision_line
from harness.score.family import family_pairs
from harness.score.stats import holm
from harness.score.summary_model import Comparison
from harness.score.wording import format_p

Gold = dict[str, dict[str, list[str]]]


def variant_pairs(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[str, str]]:
    """Variants of the same name; or, when each run has one variant, those two."""
    names_a, names_b = sorted(set(a["variant"])), sorted(set(b["variant"]))
    shared = [(n, n) for n in names_a if n in names_b]
    if shared:
        return shared
    if len(names_a) == 1 and len(names_b) == 1:
        return [(names_a[0], names_b[0])]
    return []


def compare_outcomes(
    a: pd.DataFrame,
    b: pd.DataFrame,
    gold: Gold | None = None,
    *,
    margin: float = DEFAULT_MARGIN,
    alpha: float = 0.05,
    gated: tuple[str, ...] = DEFAULT_GATED,
    names: tuple[str, str] | None = None,
) -> Comparison:
    """The comparison of B against A from their unit outcomes: the decision, and its figures as A − B. `names`:
    (A, B) as the comparison names them (else each side's variant)."""
    name_a = str(a["variant"].iloc[0]) if len(a) else "A"
    name_b = str(b["variant"].iloc[0]) if len(b) else "B"
    decision = decide(
        b, a, gold or {}, candidate=name_b, control=name_a, control_run="A", changed={},
        gated=gated, margin=margin, alpha=alpha,
    )  # fmt: skip
    shown_a, shown_b = names or (name_a, name_b)
    return Comparison(a=shown_a, b=shown_b, **comparison_row(decision))


def comparison_row(d: Decision) -> dict[str, Any]:
    """A decision (B the candidate, A the control) as a comparison row; differences stored as A − B."""
    v, c = d.metrics["verdict_accuracy"], d.metrics["claim_accuracy"]
    b_only, a_only = _split(v)
    return {
        "cases": d.paired_cases,
        "unpaired_cases": d.unpaired_cases,
        "units": d.paired_units,
        "verdict_accuracy_diff": _neg(v.diff),
        "verdict_accuracy_diff_ci": _neg_ci(v.diff_ci),
        "verdict_accuracy_a": v.control,
        "verdict_accuracy_b": v.candidate,
        "mcnemar_a_only": a_only,
        "mcnemar_b_only": b_only,
        "mcnemar_p": v.p if v.p is not None else 1.0,
        "test": v.test,
        "mde": v.mde,
        "claim_accuracy_diff": _neg(c.diff),
        "claim_accuracy_diff_ci": _neg_ci(c.diff_ci),
        "claim_accuracy_diff_p": c.p,
        "decision": d.decision,
        "conclusion": decision_line(d),
        "reasons": d.reasons,
        "margin": d.margin,
        "alpha": d.alpha,
        "tests": d.tests,
        "cases_needed": d.cases_needed,
    }


def _split(m: MetricComparison) -> tuple[int, int]:
    """(candidate-only, control-only) units of a metric: discordant units split by the difference they make."""
    if m.diff is None or m.discordant is None:
        return 0, 0
    net = round(m.diff * m.units)
    return (m.discordant + net) // 2, (m.discordant - net) // 2


def _neg(value: float | None) -> float | None:
    return None if value is None else -value


def _neg_ci(ci: list[float] | None) -> list[float] | None:
    return None if ci is None else [-ci[1], -ci[0]]


def compare_pairs(
    outcomes: pd.DataFrame,
    names: Sequence[str],
    gold: Gold | None = None,
    *,
    control: str | None = None,
    all_pairs: bool = False,
    decided: Mapping[tuple[str, str], Decision] | None = None,
    **settings: Any,
) -> list[Comparison]:
    """The family's pairs (`family.family_pairs`: every pair, B against the earlier A, up to a handful of variants
    or when asked; past it each variant against the control), Holm-adjusted as one family. `decided`: decisions
    already made by the same engine and settings, by (control, candidate): such a pair is not decided again."""
    by_name = {name: frame for name, frame in outcomes.groupby("variant", sort=False)} if len(outcomes) else {}
    empty = outcomes.iloc[0:0]
    made = decided or {}
    return adjust_comparisons(
        [
            Comparison(a=a, b=b, **comparison_row(made[(a, b)]))
            if (a, b) in made
            else compare_outcomes(by_name.get(a, empty), by_name.get(b, empty), gold, names=(a, b), **settings)
            for a, b in family_pairs(names, control=control, all_pairs=all_pairs)
        ]
    )


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, **settings: Any) -> list[Comparison]:
    """`vbench compare`: each paired variant of run B decided against its namesake in run A."""
    return adjust_comparisons(
        [
            compare_outcomes(a[a["variant"] == va], b[b["variant"] == vb], names=(va, vb), **settings)
            for va, vb in variant_pairs(a, b)
        ]
    )


def adjust_comparisons(rows: list[Comparison]) -> list[Comparison]:
    """Holm-adjusted p-values over every comparison of the family, beside the raw ones."""
    for row, p in zip(rows, holm([r.mcnemar_p for r in rows]), strict=True):
        row.p_adjusted = p
    for row, p in zip(rows, holm([r.claim_accuracy_diff_p for r in rows]), strict=True):
        row.claim_accuracy_diff_p_adjusted = p
    return rows


def conclusion(row: Comparison) -> str:
    """The comparison's sentence: its decision's (`decide.decision_line`), as recorded in the row.

    A summary written before comparisons were decisions holds no sentence: its figures are stated, undecided.
    """
    if row.conclusion:
        return row.conclusion
    if row.cases == 0 or row.verdict_accuracy_diff is None:
        return f"{row.a} vs {row.b}: no case could be paired, so nothing was compared."
    return (
        f"{row.a} vs {row.b}: {row.verdict_accuracy_diff * 100 + 0.0:+.1f} pp verdict accuracy (A − B) on "
        f"{row.cases} paired cases, p {format_p(row.verdict_p)}; this summary predates decided comparisons."
    )
