"""Imported sessions as unscored cases: a run answers them (a judge for `vbench estimate`), no figure counts them,
and `vbench cases validate` still refuses them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpus.loader import CorpusError, load_cases
from harness.run.log import ResultRecord
from harness.run.select import load_case_refs
from harness.score.estimate import judge_from_run, judge_reference
from harness.score.headline import is_headline
from tests.score.labelled_folder import import_folder


def test_a_run_takes_unlabelled_sessions_as_unscored_cases(tmp_path: Path) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    with pytest.raises(CorpusError, match="unlabelled"):
        load_cases([folder])  # validate, export and every other reader still refuse them
    refs, _ = load_case_refs([folder])
    loaded = [r.load() for r in refs]
    assert len(loaded) == len(cases)
    assert all("unscored" in c.tags and c.expected.acceptable_verdicts() == set() for c in loaded)


def test_unscored_answers_are_a_judge_and_in_no_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = import_folder(tmp_path)
    folder, run = tmp_path / "imp", tmp_path / "run"
    assert main(["run", "--cases", str(folder), "--model", "reference", "--out", str(run), "--no-report"]) == 0
    records = [ResultRecord.model_validate_json(x) for x in (run / "results.jsonl").read_text().splitlines() if x]
    assert len(records) == len(cases)
    assert not any(is_headline(r) for r in records)
    summary = json.loads((run / "summary.json").read_text())
    (variant,) = summary["variants"]
    assert variant["quality_cases"] == 0 and variant["claims_scored"] == 0
    assert variant["verdict_accuracy"] is None and variant["unsafe_pass_rate"] is None
    from_run, here = judge_from_run(run), judge_reference(cases)
    assert from_run == here  # the run's answers are the reference verifier's on every session
