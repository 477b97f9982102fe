"""The run's worker stores each record's conformance findings as it writes it (`ResultRecord.findings`): the
findings checking the record against its case afterwards gives."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main
from harness.corpus.schema import Case
from harness.run.conformance import findings_of
from harness.run.folder import read_cases, read_manifest, read_results
from harness.run.outcome import CLEAN, Findings
from harness.run.records import record_from_crash

ROOT = Path(__file__).resolve().parents[2]


def test_each_record_carries_the_findings_of_its_case(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--perturb", "claim-order"]
    assert main([*args, "--out", str(run), "--no-report", "--no-cache"]) in (0, 1)
    cases = {cid: Case.model_validate(data) for cid, data in read_cases(run).items()}
    excerpt = read_manifest(run).excerpt_chars
    records = read_results(run)
    headline = [r for r in records if r.perturbation is None]
    assert headline and len(headline) < len(records)
    for record in headline:
        assert record.findings == findings_of(
            record.model_copy(update={"findings": None}), cases[record.case_id], excerpt
        )
    assert all(r.findings is None for r in records if r.perturbation is not None)  # checked by no reader


def test_a_crashed_policy_case_is_found_without_an_evaluation() -> None:
    case = next(
        Case.model_validate(data)
        for data in (
            __import__("yaml").safe_load(p.read_text()) for p in sorted((ROOT / "cases" / "policy").rglob("*.yaml"))
        )
        if isinstance(data, dict) and data.get("verifier_response")
    )
    record = record_from_crash(case, "policy", 0, "harness_error: boom")
    assert record.findings == Findings(mismatches=("no evaluation: harness_error: boom",))
    assert record.findings != CLEAN
