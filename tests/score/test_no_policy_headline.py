"""A run in which no policy case ran says so in every headline and gate line: never `0 of 0`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.folder import read_manifest
from harness.run.gates import GateSettings
from harness.score.certificate import NO_POLICY_CASES, certificate_status
from harness.score.scoring import score_run
from harness.score.summary_model import Conformance
from tests.run.corpus_builder import write_corpus


def test_the_certificate_status_of_no_policy_case() -> None:
    conformance = {"scenarios": {"s1": {"cases": 0, "passed": 0}}, "policy_cases": 0, "policy_passed": 0}
    conformance |= {"invariant_violations": 0, "quality_expectation_mismatches": 0}
    assert certificate_status(Conformance.model_validate(conformance), errors=0) == ("failed", NO_POLICY_CASES)


def test_a_quality_only_run_says_nothing_was_certified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    main(["run", "--cases", str(corpus), "--filter", "kind:quality", "--out", str(out), "--no-cache"])
    printed = capsys.readouterr()
    certificate = json.loads((out / "certificate.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert certificate["headline"] == NO_POLICY_CASES
    assert NO_POLICY_CASES in printed.err and "no policy cases in this run" in printed.out  # headline, tally
    written = [printed.out, printed.err, json.dumps(summary["gates"]), json.dumps(certificate)]
    written += [(out / name).read_text() for name in ("summary.md", "certificate.html", "report.html")]
    for text in written:
        assert "0 of 0 policy" not in text and "0/0 policy" not in text


def test_a_run_whose_policy_cases_were_not_scored_checked_nothing_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    assert main(["run", "--cases", str(corpus), "--out", str(out), "--no-cache", "--no-report"]) == 0
    # the policy results lost (as from a run killed before they were written): rescored, nothing was checked
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(line for line in lines if '"kind":"policy"' not in line))
    assert len(results.read_text().splitlines()) < len(lines)
    summary = score_run(out, GateSettings.from_manifest_settings(read_manifest(out).settings))
    gate = summary.gates[0]
    assert gate.gate == "policy_conformance" and gate.checked is False and not summary.passed
    assert gate.detail.startswith("not checked: no policy case was scored")
    junit = (out / "junit.xml").read_text()
    assert "not checked: no policy case was scored" in junit and "<failure" in junit
    capsys.readouterr()


def test_a_run_filtered_to_quality_cases_says_its_policy_gate_was_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    args = ["run", "--cases", str(corpus), "--filter", "kind:quality", "--out", str(tmp_path / "run"), "--no-cache"]
    assert main([*args, "--no-report"]) == 0
    assert "gate not checked policy_conformance [all]: not checked: the filter kind:quality selects no policy case" in (
        capsys.readouterr().out
    )
    assert "<skipped" in (tmp_path / "run" / "junit.xml").read_text()
