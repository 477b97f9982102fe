"""What the history answers: a record as a control folder, two records compared by case, the run where a case's
outcome changed, and a metric's trend.

Pairing and deciding are the decision engine's (`harness.score.decide.decide`); a record's units are a run's
outcomes.jsonl columns, so a recorded run decides exactly as its folder would.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from pydantic import BaseModel

from harness.history.record import HistoryError, RecordHead, RunRecord
from harness.history.store import HistoryStore
from harness.run.folder import write_manifest
from harness.run.gates import DEFAULT_DECIDE_ON, Gates
from harness.score.decide import Decision, decide, what_changed
from harness.score.outcomes import write_outcomes
from harness.score.pairing import resolve_pairs


def as_control_folder(record: RunRecord, folder: Path) -> Path:
    """Write the record as a baseline folder (manifest.json, outcomes.jsonl) a run decides against."""
    folder.mkdir(parents=True, exist_ok=True)
    write_manifest(folder, record.manifest_model())
    write_outcomes(folder, record.unit_frame())
    return folder


def diff(
    a: RunRecord,
    b: RunRecord,
    *,
    variant: str | None = None,
    gated: Sequence[str] = DEFAULT_DECIDE_ON,
    margin: float | None = None,
    alpha: float = 0.05,
) -> Decision:
    """B (the candidate) against A (the control), paired by case: the decision engine's decision."""
    cand = b.head.variant(variant)
    man_a, man_b = a.manifest_model(), b.manifest_model()
    (pair,) = resolve_pairs([v for v in man_b.variants if v.name == cand.name], None, man_a.variants)
    units_a, units_b = a.unit_frame(), b.unit_frame()
    if units_a.empty or units_b.empty:
        raise HistoryError(f"run {(a if units_a.empty else b).head.id} recorded no unit outcome: nothing to pair")
    info = {v.name: v for v in man_a.variants}
    return decide(
        units_b[units_b["variant"] == cand.name],
        units_a[units_a["variant"] == pair.control],
        {},
        candidate=f"{cand.name} ({b.head.id})",
        control=f"{pair.control} ({a.head.id})",
        control_run=f"recorded run {a.head.id} (commit {a.head.commit or '?'})",
        changed=what_changed(next(v for v in man_b.variants if v.name == cand.name), info[pair.control], man_b, man_a),
        gated=tuple(gated),
        margin=Gates().margin_fraction if margin is None else margin,
        alpha=alpha,
    )


class CaseOutcome(BaseModel):
    """One case in one recorded run: its verdicts over epochs and whether the majority was right."""

    run: str
    commit: str | None
    verdicts: list[str | None]
    right: bool | None


class Bisect(BaseModel):
    case_id: str
    variant_model: str | None
    history: list[CaseOutcome]
    first_change: int | None
    """Index into `history` of the first run whose outcome differs from the run before it."""


def _case_outcome(head: RecordHead, units: pd.DataFrame, case_id: str, model: str | None) -> CaseOutcome | None:
    if units.empty or "case_id" not in units:
        return None
    names = [v.name for v in head.variants if model is None or v.model == model]
    rows = units[(units["case_id"] == case_id) & units["variant"].isin(names[:1])]
    if rows.empty:
        return None
    right = rows["verdict_correct"].dropna().astype(bool)
    return CaseOutcome(
        run=head.id,
        commit=head.commit,
        verdicts=[None if v is None else str(v) for v in rows["verdict"].tolist()],
        right=None if right.empty else bool(right.mean() > 0.5),
    )


def bisect(store: HistoryStore, heads: Sequence[RecordHead], case_id: str, model: str | None = None) -> Bisect:
    """The first recorded run (oldest first) where the case's outcome (its verdicts and their rightness) changed."""
    found: list[CaseOutcome] = []
    for head in heads:
        outcome = _case_outcome(head, store.load(head.id).unit_frame(), case_id, model)
        if outcome is not None:
            found.append(outcome)
    if not found:
        raise HistoryError(f"case {case_id!r} is in no recorded run{f' of model {model}' if model else ''}")
    first = next(
        (
            i
            for i in range(1, len(found))
            if (found[i].right, found[i].verdicts) != (found[i - 1].right, found[i - 1].verdicts)
        ),
        None,
    )
    return Bisect(case_id=case_id, variant_model=model, history=found, first_change=first)


class Point(BaseModel):
    run: str
    run_id: str
    recorded_at: str
    commit: str | None
    branch: str | None
    variant: str
    value: float | None
    ci: list[float] | None
    bad: int
    units: int


def trend(heads: Sequence[RecordHead], metric: str, model: str | None = None) -> list[Point]:
    """One point per recorded run (oldest first): the metric of its variant (of `model`, else its only or first
    variant) with the CI the run's summary gave it, and the bad units the alert rule counts."""
    points = []
    for head in heads:
        chosen = [v for v in head.variants if model is None or v.model == model]
        if not chosen:
            continue
        v = chosen[0]
        fig = v.figures.get(metric)
        if metric == "verdict_accuracy":
            bad, units = v.units - v.verdict_correct, v.units
        else:
            bad, units = v.unsafe_pass, v.unsafe_eligible
        point = Point(
            run=head.id, run_id=head.run_id, recorded_at=head.recorded_at, commit=head.commit, branch=head.branch,
            variant=v.name, value=fig.value if fig else None, ci=fig.ci if fig else None, bad=bad, units=units,
        )  # fmt: skip
        points.append(point)
    return points


ALERTABLE = ("unsafe_pass_rate", "verdict_accuracy")
"""The metrics the alert rule reads as counts of bad units per run (unsafe PASSes; verdicts wrong)."""
