"""Per-case outcomes: the small table a baseline keeps so a later run can be paired with it.

`outcomes.jsonl` holds one row per variant × case × epoch (a *unit*): enough to
pair a later run with this one case by case and epoch by epoch (verdict
correctness, the unsafe-PASS flags, claims right and the predicted labels).
Comparisons between variants read the per-case majority of those rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from harness.run.folder import OUTCOMES_FILE, RESULTS_FILE, RunFileError, read_text, write_lines
from harness.run.log import ResultRecord
from harness.run.runlog import RunLog
from harness.score.headline import is_headline
from harness.score.outcome import Outcome, record_outcome

UNIT_COLUMNS = [
    "variant",
    "case_id",
    "case_hash",
    "epoch",
    "verdict",
    "verdict_correct",
    "model_verdict_correct",
    "unsafe_eligible",
    "unsafe_pass",
    "claims_right",
    "claims_total",
    "claims",
    "claims_wrong",
]
CASE_COLUMNS = [
    "variant",
    "case_id",
    "case_hash",
    "verdict_correct",
    "model_verdict_correct",
    "claims_right",
    "claims_total",
]


def outcome_row(record: ResultRecord, result: Outcome) -> dict[str, Any] | None:
    """The unit row of one result, None when it has none (a policy result, a transport error); `result` is its
    `record_outcome` (computed once per record)."""
    if record.kind != "quality" or record.error is not None:
        return None
    gold = record.gold.claims or {}
    return {
        "variant": record.variant,
        "case_id": record.case_id,
        "case_hash": record.case_hash,
        "epoch": int(record.epoch),
        "verdict": record.verdict,
        "verdict_correct": result.verdict_correct,
        "model_verdict_correct": result.model_verdict_correct,
        "unsafe_eligible": result.unsafe_eligible,
        "unsafe_pass": result.unsafe_pass,
        "claims_right": float(result.claims_right),
        "claims_total": float(result.claims_total),
        "claims": {cid: record.claims.get(cid) for cid in gold},
        "claims_wrong": list(result.claims_wrong),
    }


def outcomes_table(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """The unit frame of `outcome_row` rows."""
    return pd.DataFrame(list(rows), columns=UNIT_COLUMNS)


def outcomes_frame(records: Iterable[ResultRecord]) -> pd.DataFrame:
    """One row per scored quality result (variant × case × epoch); transport errors have no outcome."""
    rows = (outcome_row(record, record_outcome(record)) for record in records)
    return outcomes_table(row for row in rows if row is not None)


def case_outcomes(units: pd.DataFrame) -> pd.DataFrame:
    """One row per variant × case: the majority verdict correctness and the mean claims right over epochs."""
    if units.empty:
        return pd.DataFrame(columns=CASE_COLUMNS)
    if "epoch" not in units:  # a baseline written before outcomes had epochs: already one row per case
        return units[[c for c in CASE_COLUMNS if c in units]]
    # as floats (None -> NaN, which the mean skips as it skipped None): an object column sends pandas' groupby
    # mean through a Python loop per group, a hundred times slower on a large run
    means = ["verdict_correct", "model_verdict_correct", "claims_right", "claims_total"]
    units = units.assign(**{c: pd.to_numeric(units[c], errors="coerce").astype(float) for c in means})
    per_case = units.groupby(["variant", "case_id"], sort=True).agg(
        case_hash=("case_hash", "first"),
        verdict_correct=("verdict_correct", "mean"),
        model_verdict_correct=("model_verdict_correct", "mean"),
        claims_right=("claims_right", "mean"),
        claims_total=("claims_total", "mean"),
    )
    per_case["verdict_correct"] = per_case["verdict_correct"] > 0.5
    per_case["model_verdict_correct"] = per_case["model_verdict_correct"] > 0.5
    return per_case.reset_index()[CASE_COLUMNS]


def write_outcomes(run_dir: Path, frame: pd.DataFrame) -> None:
    """One JSON line per unit, keys in column order. Rows are built from the columns' `tolist()` (Python values,
    as `to_dict(orient="records")` gives them, in half its time)."""
    columns = list(frame.columns)
    rows = zip(*(frame[c].tolist() for c in columns), strict=True)
    write_lines(run_dir, OUTCOMES_FILE, (json.dumps(dict(zip(columns, row, strict=True))) + "\n" for row in rows))


def load_outcomes(folder: Path) -> pd.DataFrame:
    """A run's or a baseline's unit outcomes: from outcomes.jsonl, or computed from results.jsonl."""
    path = folder / OUTCOMES_FILE
    if path.exists():
        rows: list[dict[str, Any]] = []
        for number, line in enumerate(read_text(folder, OUTCOMES_FILE, errors="replace").splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise RunFileError(path, f"not JSON: {exc}", number) from None
        return pd.DataFrame(rows)
    if (folder / RESULTS_FILE).exists():
        return outcomes_frame(r for r in RunLog.read(folder).records() if is_headline(r))
    raise FileNotFoundError(f"{folder} holds neither {OUTCOMES_FILE} nor results.jsonl")
