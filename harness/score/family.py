"""Many variants at the cost of few: which pairs a family of variants compares, and how it ranks them.

Every pair of k variants is k(k-1)/2 decisions, Holm-adjusted as one family: past a handful of variants that is
neither fast nor readable nor useful (200 variants: 19,900 decisions). Past `ALL_PAIRS_MAX` variants a study
instead decides each variant against its control (k - 1 decisions), and ranks all of them at once with Hsu's
multiple comparisons with the best (MCB): for each variant a simultaneous interval of its distance to the best
of the others. All pairs stay available on request (`Gates.all_pairs`).

MCB (Hsu, *Multiple Comparisons: Theory and Methods*, 1996, ch. 4; Hsu 1984, Ann. Statist. 12:1136) is computed
from the variant × case matrix of per-case means, over the cases every variant answered, so one matrix product
gives every pair's paired standard error: a comparison costs microseconds, not a decision's milliseconds. The
per-case means make the interval clustered by case (epochs of a case are not independent evidence). Two choices
differ from the textbook's balanced one-way layout, each toward wider intervals: each pair has its own paired
standard error (cases, not a pooled residual), and the critical value is Student's t at the one-sided level
alpha/(k-1) (Bonferroni) in place of Dunnett's one-sided quantile, which needs equal correlations.
`harness.score.family_study` measures the simultaneous coverage this gives against variants of known skill.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from harness.score.summary_model import Decision, RankedVariant, Ranking, Standing

ALL_PAIRS_MAX = 6
"""Up to this many variants a study compares every pair (15 decisions); past it, each with the control."""
REGRESSIONS_KEPT = 5
"""Past `ALL_PAIRS_MAX` variants, the regressed units a decision details (all its regressed case ids are kept)."""


def family_pairs(names: Sequence[str], *, control: str | None = None, all_pairs: bool = False) -> list[tuple[str, str]]:
    """The (A, B) pairs a study decides, B against A: every pair (A the earlier name) up to `ALL_PAIRS_MAX`
    variants or when asked for; past it, each other variant against the control (the first variant unless one is
    named)."""
    names = list(names)
    if all_pairs or len(names) <= ALL_PAIRS_MAX:
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    ctl = control if control in names else names[0]
    return [(ctl, b) for b in names if b != ctl]


def large_family(names: Sequence[str], all_pairs: bool = False) -> bool:
    """A study past `ALL_PAIRS_MAX` variants that did not ask for every pair: decided against the control, ranked,
    and written compactly (`trimmed`, a summary.json without indent)."""
    return not all_pairs and len(names) > ALL_PAIRS_MAX


def trimmed(decision: Decision) -> Decision:
    """A decision of a large family with its first `REGRESSIONS_KEPT` regressed units in detail, and their count."""
    if len(decision.regressions) <= REGRESSIONS_KEPT:
        return decision
    return decision.model_copy(
        update={"regressions": decision.regressions[:REGRESSIONS_KEPT], "regressions_total": len(decision.regressions)}
    )


def case_matrix(outcomes: pd.DataFrame, names: Sequence[str], column: str) -> tuple[np.ndarray, list[str]]:
    """Variant × case matrix of a per-unit yes/no column's mean over epochs, on the cases (id and content hash)
    every named variant answered; and those case ids."""
    known = outcomes[outcomes["variant"].isin(list(names)) & outcomes[column].notna()]
    if known.empty:
        return np.zeros((len(names), 0)), []
    table = known.assign(value=known[column].astype(float)).pivot_table(
        index="variant", columns=["case_id", "case_hash"], values="value", aggfunc="mean"
    )
    table = table.reindex(list(names)).dropna(axis=1, how="any")
    return table.to_numpy(float), [str(case) for case, _ in table.columns]


def mcb_intervals(matrix: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Constrained MCB intervals of (rate_i − max over j ≠ i of rate_j) for each row of a variant × case matrix.

    lower_i = min(0, min_j (d_ij − q·se_ij)), upper_i = max(0, min_j (d_ij + q·se_ij)), with d_ij the mean paired
    difference of rows i and j over the cases, se_ij its standard error and q Student's t quantile at 1 − alpha/(k−1)
    on n − 1 degrees of freedom. Returns (lower, upper, q); q is None when there are fewer than two rows or cases.
    """
    k, n = matrix.shape
    if k < 2 or n < 2:
        return np.zeros(k), np.zeros(k), None
    means = matrix.mean(axis=1)
    cov = np.cov(matrix, ddof=1)
    var = np.diag(cov)
    pair_var = np.maximum(var[:, None] + var[None, :] - 2 * cov, 0.0)
    se = np.sqrt(pair_var / n)
    q = float(stats.t.ppf(1 - alpha / (k - 1), n - 1))
    diff = means[:, None] - means[None, :]
    off = ~np.eye(k, dtype=bool)
    low = np.where(off, diff - q * se, np.inf).min(axis=1)
    high = np.where(off, diff + q * se, np.inf).min(axis=1)
    return np.minimum(0.0, low), np.maximum(0.0, high), q


def standing(lower: float, upper: float) -> Standing:
    """'not best' when the interval lies at or below 0 and reaches below it; 'best' when it lies at or above 0 and
    reaches above it; otherwise (it spans 0, or is the single point 0) 'may be best'."""
    if upper <= 0 < -lower:
        return "not best"
    if lower >= 0 < upper:
        return "best"
    return "may be best"


def rank_variants(
    outcomes: pd.DataFrame,
    names: Sequence[str],
    *,
    metric: str = "verdict_accuracy",
    column: str = "verdict_correct",
    alpha: float = 0.05,
) -> Ranking:
    """The family ranked by one per-unit yes/no column (higher is better), with Hsu's MCB intervals."""
    matrix, cases = case_matrix(outcomes, names, column)
    lower, upper, q = mcb_intervals(matrix, alpha)
    rates = matrix.mean(axis=1) if matrix.shape[1] else np.full(len(names), np.nan)
    order = np.argsort(-np.nan_to_num(rates, nan=-1.0), kind="stable")
    rank = np.empty(len(names), int)
    rank[order] = np.arange(1, len(names) + 1)
    rows = [
        RankedVariant(
            name=name,
            rank=int(rank[i]),
            rate=None if np.isnan(rates[i]) else float(rates[i]),
            mcb_lower=float(lower[i]),
            mcb_upper=float(upper[i]),
            standing=standing(float(lower[i]), float(upper[i])),
        )
        for i, name in enumerate(names)
    ]
    rows.sort(key=lambda r: r.rank)
    return Ranking(
        metric=metric, alpha=alpha, cases=len(cases), critical_value=q, variants=rows, note=ranking_note(rows, q, alpha)
    )


def ranking_note(rows: Sequence[RankedVariant], q: float | None, alpha: float) -> str:
    """One sentence on what the ranking can say."""
    if q is None:
        return "fewer than two variants or two shared cases: nothing could be ranked"
    best = [r.name for r in rows if r.standing == "best"]
    may = [r.name for r in rows if r.standing == "may be best"]
    level = f"{(1 - alpha) * 100:g}%"
    if best:
        return f"{best[0]} is the best of {len(rows)} variants (MCB, simultaneous {level})"
    return (
        f"{len(may)} of {len(rows)} variants may be the best (MCB, simultaneous {level}); "
        f"{len(rows) - len(may)} are worse than the best"
    )
