"""Scoring as `vbench run` goes (the scorer fed by `run_study`'s `on_record` hook) gives the very files that scoring
the finished folder's log gives (`score_run`): byte for byte, whatever order the units finished in."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import skill_judge_responder
from harness.report.load import gate_settings
from harness.run.folder import RESULTS_FILE, read_manifest
from harness.score.scoring import GateSettings, score_run
from harness.validity.judge import model_name
from tests.run.test_cli_stop_early import CASES_DIR, CONTROL_SKILL
from tests.run.test_cli_stop_early import run as run_stopping

SCORED = ("summary.json", "outcomes.jsonl", "junit.xml")
CASES = [Path("cases/quality"), Path("cases/policy")]


def scored_files(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in SCORED}


def rescored(run_dir: Path, tmp: Path, gates: GateSettings | None = None) -> dict[str, bytes]:
    """The scored files of a copy of `run_dir`, scored again from its log (with the run's `gates`)."""
    again = tmp / f"{run_dir.name}-again"
    shutil.copytree(run_dir, again)
    for name in SCORED:
        (again / name).unlink()
    score_run(again, gates or GateSettings())
    return scored_files(again)


def test_a_resumed_run_scores_the_records_it_found_and_the_ones_it_made(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = ["run", "--cases", "cases/quality", "--cases", "cases/policy", "--epochs", "2", "--no-report"]
    assert main([*args, "--out", str(run_dir)]) == 0
    whole = scored_files(run_dir)["outcomes.jsonl"]
    log = run_dir / RESULTS_FILE
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[: len(lines) // 3]))  # a run stopped a third of the way
    assert main([*args, "--out", str(run_dir), "--resume"]) == 0
    assert scored_files(run_dir) == rescored(run_dir, tmp_path)
    assert scored_files(run_dir)["outcomes.jsonl"] == whole  # (timings differ from the first run's: not its summary)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalOpenAIServer]:
    """The skill judge: each claim right with the probability its model's name gives."""
    monkeypatch.setenv("JUDGE_KEY", "local-test-server")
    with LocalOpenAIServer(responder=skill_judge_responder(load_cases([CASES_DIR]))) as server:
        yield server


def test_a_run_stopped_early_scores_the_units_it_sent_as_its_log_does(tmp_path: Path, judge: LocalOpenAIServer) -> None:
    out = tmp_path / "stopped"
    assert run_stopping(judge, out, model_name(CONTROL_SKILL, 1), model_name(0.4, 2)) == 1
    manifest = read_manifest(out)
    stop = manifest.settings.stop_early
    assert stop is not None and stop.ended and stop.reason == "block" and stop.levels
    settings = gate_settings(manifest)  # from the manifest: at the design's last level, as the run decided
    assert settings.gates.alpha == stop.levels[-1] < 0.05
    assert scored_files(out) == rescored(out, tmp_path, settings)
