"""Score a finished run folder: summary.json, outcomes.jsonl and junit.xml from the run log."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.corpus.schema import Case
from harness.run.log import read_cases, read_manifest, read_results
from harness.score.decide import DEFAULT_GATED, DEFAULT_MARGIN
from harness.score.gates import threshold_gates
from harness.score.headline import headline_records
from harness.score.junit import junit_xml
from harness.score.outcomes import outcomes_frame, write_outcomes
from harness.score.regression import decision_gates, load_control_run, make_decisions
from harness.score.robustness import add_robustness
from harness.score.summary import build_summary
from harness.score.summary_model import write_summary

SUMMARY_FILE, JUNIT_FILE = "summary.json", "junit.xml"


@dataclass
class GateSettings:
    fail_under: dict[str, float] = field(default_factory=dict)
    max_unsafe_pass: float | None = None
    baseline: Path | None = None
    alpha: float = 0.05
    max_error_rate: float = 0.0
    control: str | None = None
    margin: float = DEFAULT_MARGIN
    """Non-inferiority margin as a fraction (0.05 = 5 percentage points)."""
    require_ship: bool = False
    decide_on: tuple[str, ...] = DEFAULT_GATED


def load_run_cases(run_dir: Path) -> dict[str, Case]:
    return {cid: Case.model_validate(data) for cid, data in read_cases(run_dir).items()}


def score_run(run_dir: Path, gates: GateSettings) -> dict[str, Any]:
    """Compute the summary with its gates from the run log, write the scored files, return the summary.

    Everything but `variants[].robustness` reads the headline results only (perturbed units left out).
    """
    manifest = read_manifest(run_dir)
    # in key order, not the order units finished: every figure (float sums, bootstrap draws) is then the same
    # for the same results, whatever the concurrency, executor or shards that made them (issue 19)
    logged = sorted(read_results(run_dir), key=lambda r: r.key)
    records = headline_records(logged)
    outcomes = outcomes_frame(records)
    summary = build_summary(manifest, records, load_run_cases(run_dir), outcomes)
    add_robustness(summary, logged, manifest.settings.get("perturb") or [])
    summary["run"]["perturbed_results"] = len(logged) - len(records)
    gate_rows = threshold_gates(summary, gates.fail_under, gates.max_unsafe_pass, gates.max_error_rate)
    baseline = load_control_run(gates.baseline) if gates.baseline is not None else None
    decisions = make_decisions(
        manifest,
        records,
        outcomes,
        gates.control,
        baseline,
        gated=tuple(gates.decide_on),
        margin=gates.margin,
        alpha=gates.alpha,
    )
    if baseline is not None:
        summary["baseline"] = {"path": str(gates.baseline)}
    summary["decisions"] = [d.model_dump(mode="json") for d in decisions]
    gate_rows += decision_gates(decisions, gates.require_ship)
    summary["gates"] = gate_rows
    summary["passed"] = all(g["passed"] for g in gate_rows)
    summary = write_summary(run_dir / SUMMARY_FILE, summary)
    write_outcomes(run_dir, outcomes)
    policy_ids = sorted({r.case_id for r in records if r.kind == "policy"})
    (run_dir / JUNIT_FILE).write_text(
        junit_xml(summary["conformance"], policy_ids, gate_rows, summary["decisions"]), encoding="utf-8"
    )
    return summary
