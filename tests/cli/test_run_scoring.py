"""`vbench run` scores records as they are written: the files are those scoring the folder afterwards writes."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.cli.run import Preload, ScoreAsItGoes
from harness.run.folder import read_manifest, read_results
from harness.run.gates import GateSettings
from harness.score.scoring import score_run

ROOT = Path(__file__).resolve().parents[2]
SCORED = ("summary.json", "outcomes.jsonl", "junit.xml")


def _same_as_scoring_the_folder(run: Path) -> None:
    as_it_went = {name: (run / name).read_bytes() for name in SCORED}
    score_run(run, GateSettings.from_manifest_settings(read_manifest(run).settings))
    assert {name: (run / name).read_bytes() for name in SCORED} == as_it_went


def test_a_perturbing_run_scored_as_it_goes_keeps_what_robustness_reads(tmp_path: Path) -> None:
    """Robustness pairs each perturbed answer with the original's: the scorer keeps those records when the run
    perturbs (and only their tally's part otherwise), so the robustness figures are those of the folder."""
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--perturb", "claim-order"]
    assert main([*args, "--out", str(run), "--no-report"]) in (0, 1)
    robustness = json.loads((run / "summary.json").read_text())["variants"][0]["robustness"]
    assert robustness and "claim-order" in json.dumps(robustness)
    _same_as_scoring_the_folder(run)


def test_a_run_scored_as_it_goes_writes_what_scoring_its_folder_writes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(run), "--no-report"]) == 0
    as_it_went = {name: (run / name).read_bytes() for name in SCORED}
    score_run(run, GateSettings.from_manifest_settings(read_manifest(run).settings))
    assert {name: (run / name).read_bytes() for name in SCORED} == as_it_went


class Unreadable(dict):  # type: ignore[type-arg]
    """Cases that cannot be read back: scoring a record against its case raises."""

    def get(self, key: object, default: object = None) -> object:
        raise OSError(f"case {key} cannot be read")


def test_a_record_that_cannot_be_scored_drops_the_scorer_not_the_run(tmp_path: Path) -> None:
    """Scoring during the run never stops it: the folder is then scored after the run, as it always was."""
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(run), "--no-report"]) == 0
    done = Preload(())
    done.start()
    done.join()
    scoring = ScoreAsItGoes(done, 200, Unreadable())
    records = read_results(run)
    scoring(records[0])
    assert scoring.failed and scoring.finish() is None
    scoring(records[1])  # later records are let through untouched
    assert scoring.scorer is None and scoring.waiting == []
