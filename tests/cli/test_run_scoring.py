"""`vbench run` finishes in its own process: the files are those scoring and reporting the folder again writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.folder import read_manifest
from harness.run.gates import GateSettings
from harness.score.scoring import score_run
from tests.report.conftest import embedded

ROOT = Path(__file__).resolve().parents[2]
SCORED = ("summary.json", "outcomes.jsonl", "junit.xml")


def _same_as_scoring_the_folder(run: Path) -> None:
    as_it_went = {name: (run / name).read_bytes() for name in SCORED}
    score_run(run, GateSettings.from_manifest_settings(read_manifest(run).settings))
    assert {name: (run / name).read_bytes() for name in SCORED} == as_it_went


def test_a_perturbing_run_keeps_what_robustness_reads(tmp_path: Path) -> None:
    """Robustness pairs each perturbed answer with the original's: the figures are those of the folder."""
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--perturb", "claim-order"]
    assert main([*args, "--out", str(run), "--no-report"]) in (0, 1)
    robustness = json.loads((run / "summary.json").read_text())["variants"][0]["robustness"]
    assert robustness and "claim-order" in json.dumps(robustness)
    _same_as_scoring_the_folder(run)


def test_a_run_writes_what_scoring_its_folder_writes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(run), "--no-report"]) == 0
    as_it_went = {name: (run / name).read_bytes() for name in SCORED}
    score_run(run, GateSettings.from_manifest_settings(read_manifest(run).settings))
    assert {name: (run / name).read_bytes() for name in SCORED} == as_it_went


def test_the_report_vbench_run_writes_embeds_what_re_rendering_its_folder_embeds(tmp_path: Path) -> None:
    """The page's data is the same as `vbench report` makes from the folder (which reads the case views the run
    kept)."""
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--cases", str(ROOT / "cases" / "policy")]
    assert main([*args, "--out", str(run)]) in (0, 1)
    assert main(["report", str(run), "--out", str(tmp_path / "again")]) == 0
    made, again = embedded(run / "report.html"), embedded(tmp_path / "again" / "report.html")
    assert len(made["cases"]) > 100 and made == again


def test_vbench_run_finishes_in_its_own_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring, the certificate and the report run in the process that ran the cases, the same way on every
    platform: no child is forked to finish the run (nor, for a corpus this small, to load it)."""
    forked: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        forked.append(1)
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy" / "gatekeeper"), "--out", str(run)]) == 0
    assert forked == []
    assert (run / "report.html").exists() and (run / "certificate.json").exists()
    _same_as_scoring_the_folder(run)
