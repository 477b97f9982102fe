"""Scoring reads each record's stored findings, never the cases; a folder written before records carried them is
checked against its cases as it is read, with the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.run.folder import CASES_FILE, RESULTS_FILE, read_results
from harness.score.scoring import GateSettings, score_run
from tests.run.test_runlog import SCORED, _as_v2, _copy

ROOT = Path(__file__).resolve().parents[2]


def _scored(run: Path) -> dict[str, bytes]:
    score_run(run, GateSettings())
    return {name: (run / name).read_bytes() for name in SCORED}


def _policy_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "policy" / "gatekeeper"), "--out", str(run)]
    assert main([*args, "--no-report", "--no-cache"]) == 0
    return run


def _rewrite(run: Path, edit: object) -> None:
    lines = [json.loads(line) for line in (run / RESULTS_FILE).read_text(encoding="utf-8").splitlines()]
    (run / RESULTS_FILE).write_text("".join(json.dumps(edit(r)) + "\n" for r in lines), encoding="utf-8")  # type: ignore[operator]


def test_scoring_takes_the_findings_stored_with_each_record_and_reads_no_case(tmp_path: Path) -> None:
    """A finding planted in one record's stored findings is in the summary, and nothing else changes, though the
    folder's cases are gone: the findings came from the records."""
    run = _policy_run(tmp_path)
    clean = json.loads((run / "summary.json").read_text())["conformance"]
    assert clean["policy_passed"] == clean["policy_cases"] > 1
    planted = read_results(run)[0].case_id

    def plant(record: dict) -> dict:  # type: ignore[type-arg]
        if record["case_id"] == planted:
            record["findings"] = {"mismatches": ["planted"], "invariant_violations": []}
        return record

    _rewrite(run, plant)
    (run / CASES_FILE).unlink()
    score_run(run, GateSettings())
    found = json.loads((run / "summary.json").read_text())["conformance"]
    assert found["policy_passed"] == clean["policy_passed"] - 1
    assert [(f["case_id"], f["mismatches"]) for f in found["failures"]] == [(planted, ["planted"])]


def test_records_without_findings_are_checked_against_the_folders_cases(tmp_path: Path) -> None:
    """An older folder's records carry no findings: each is checked against its case as it is read (a broken
    evaluation is found)."""
    run = _copy(tmp_path)
    lines = _as_v2(run)
    assert all(json.loads(line)["findings"] is None for line in lines)  # the committed v1 run predates them
    assert json.loads(_scored(run)[SCORED[0]])["conformance"]["failures"] == []

    policy = next(json.loads(line) for line in lines if json.loads(line)["kind"] == "policy")

    def break_one(record: dict) -> dict:  # type: ignore[type-arg]
        if record["case_id"] == policy["case_id"]:
            record["persisted"]["verifier_evaluation"]["critical_fact_count"] = 99
        return record

    _rewrite(run, break_one)
    broken = json.loads(_scored(run)[SCORED[0]])["conformance"]["failures"]
    assert any(f["case_id"] == policy["case_id"] and f["invariant_violations"] for f in broken)


def test_a_run_scores_to_the_bytes_its_records_rescored_without_findings_give(tmp_path: Path) -> None:
    """The findings the worker stored are those the cases give when they are checked again after the run."""
    run = _policy_run(tmp_path)
    written = {name: (run / name).read_bytes() for name in SCORED}
    assert _scored(run) == written
    _rewrite(run, lambda r: {k: v for k, v in r.items() if k != "findings"})
    assert _scored(run) == written
