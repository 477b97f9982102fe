"""Per-case outcomes: the small table a baseline keeps so a later run can be paired with it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.run.log import ResultRecord, RunFileError, read_results
from harness.score.frames import claims_frame, quality_frame

OUTCOMES_FILE = "outcomes.jsonl"


def outcomes_frame(records: Sequence[ResultRecord]) -> pd.DataFrame:
    """One row per variant × case: majority verdict correctness and claims right / total per epoch."""
    columns = [
        "variant",
        "case_id",
        "case_hash",
        "verdict_correct",
        "model_verdict_correct",
        "claims_right",
        "claims_total",
    ]
    quality = quality_frame(records)
    quality = quality[quality["scored"]]
    if quality.empty:
        return pd.DataFrame(columns=columns)
    per_case = quality.groupby(["variant", "case_id"]).agg(
        verdict_correct=("verdict_correct", "mean"),
        model_verdict_correct=("model_verdict_correct", "mean"),
        epochs=("epoch", "nunique"),
    )
    claims = claims_frame(records)
    claims = claims[claims["scored"]]
    sums = (
        claims.groupby(["variant", "case_id"])["correct"].agg(["sum", "count"])
        if not claims.empty
        else pd.DataFrame(columns=["sum", "count"])
    )
    per_case = per_case.join(sums, how="left").fillna({"sum": 0.0, "count": 0.0})
    hashes = pd.Series({(r.variant, r.case_id): r.case_hash for r in records}, name="case_hash")
    hashes.index.names = ["variant", "case_id"]
    out = per_case.join(hashes, how="left").reset_index()
    out["claims_right"] = out["sum"].astype(float) / out["epochs"]
    out["claims_total"] = out["count"].astype(float) / out["epochs"]
    out["verdict_correct"] = out["verdict_correct"] > 0.5
    out["model_verdict_correct"] = out["model_verdict_correct"] > 0.5
    return out[columns]


def write_outcomes(run_dir: Path, frame: pd.DataFrame) -> None:
    with (run_dir / OUTCOMES_FILE).open("w", encoding="utf-8") as fh:
        for row in frame.to_dict(orient="records"):
            fh.write(json.dumps(row) + "\n")


def load_outcomes(folder: Path) -> pd.DataFrame:
    """A baseline's outcomes: from outcomes.jsonl, or computed from a run folder's results.jsonl."""
    path = folder / OUTCOMES_FILE
    if path.exists():
        rows: list[dict[str, Any]] = []
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise RunFileError(path, f"not JSON: {exc}", number) from None
        return pd.DataFrame(rows)
    if (folder / "results.jsonl").exists():
        return outcomes_frame(read_results(folder))
    raise FileNotFoundError(f"{folder} holds neither {OUTCOMES_FILE} nor results.jsonl")
