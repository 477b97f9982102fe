"""Checking records as the run writes them (`RunScorer`) gives the bytes scoring the folder read back gives."""

from __future__ import annotations

import json
import random
from pathlib import Path

from harness.run.folder import RESULTS_FILE, parse_record, read_results
from harness.run.runlog import RunLog
from harness.score.scoring import GateSettings, RunScorer, score_log, score_run
from tests.run.test_runlog import SCORED, _as_v2, _cases, _copy


def _scored_by_folder(run: Path) -> dict[str, bytes]:
    score_run(run, GateSettings())
    return {name: (run / name).read_bytes() for name in SCORED}


def _scored_with(run: Path, scorer: RunScorer, tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "as-it-goes"
    out.mkdir()
    score_log(RunLog.read(run), GateSettings(), out, scored=scorer)
    return {name: (out / name).read_bytes() for name in SCORED}


def test_records_scored_in_the_order_they_finished_give_the_folders_bytes(tmp_path: Path) -> None:
    """Units finish in any order and a retried unit is written twice: the last record of each unit counts, and
    the figures are summed in unit-key order, as when the folder is read back."""
    run = _copy(tmp_path)
    lines = _as_v2(run)
    failed = next(json.loads(line) for line in lines if json.loads(line)["kind"] == "policy")
    failed.update(error="timeout: tried first", outcome=None, persisted=None)  # a policy failure, had it counted
    (run / RESULTS_FILE).write_text("\n".join([json.dumps(failed), *lines]) + "\n")  # the retry's first try
    expected = _scored_by_folder(run)
    records = read_results(run)  # the last record of each unit
    random.Random(7).shuffle(records)
    scorer = RunScorer(RunLog.read(run).manifest.excerpt_chars, _cases(run).get)
    scorer.add(parse_record(json.dumps(failed).encode()))  # the first try, then the unit's record that counts
    for record in records:
        scorer.add(record)
    assert len(scorer.problems) == 20
    assert _scored_with(run, scorer, tmp_path) == expected


def test_units_the_run_did_not_score_are_read_from_the_folder(tmp_path: Path) -> None:
    """A resumed run scores only the units it ran: the others are read back from results.jsonl."""
    run = _copy(tmp_path)
    _as_v2(run)
    expected = _scored_by_folder(run)
    log = RunLog.read(run)
    scorer = RunScorer(log.manifest.excerpt_chars, _cases(run).get)
    for record in read_results(run)[::3]:
        scorer.add(record)
    assert 0 < len(scorer.problems) < len(log)
    assert _scored_with(run, scorer, tmp_path) == expected


def test_a_record_handed_with_its_case_is_checked_against_that_case_without_loading_it(tmp_path: Path) -> None:
    """The run hands each record with the case it ran with: the findings are those of loading the case, and the
    case is not loaded again (a case of another id is not taken for the record's)."""
    run = _copy(tmp_path)
    lines = _as_v2(run)
    cases = _cases(run)
    broken = json.loads(next(line for line in lines if json.loads(line)["kind"] == "policy"))
    evaluation = broken["persisted"]["verifier_evaluation"]
    evaluation["verdict"] = "REJECT" if evaluation["verdict"] != "REJECT" else "PASS"  # not what its case expects
    first = parse_record(json.dumps(broken).encode())
    records = [first, *(r for r in read_results(run) if r.key != first.key)]
    loading = RunScorer(RunLog.read(run).manifest.excerpt_chars, cases.get)
    loaded: list[str] = []

    def case_of(case_id: str) -> object:
        loaded.append(case_id)
        return cases.get(case_id)

    handed = RunScorer(RunLog.read(run).manifest.excerpt_chars, case_of)
    for record in records:
        loading.add(record)
        handed.add(record, cases[record.case_id])
    assert handed.problems == loading.problems
    assert any(found[0] for found in handed.problems.values())  # the broken record's mismatch was found
    assert loaded == []
    other = next(r for r in records if r.case_id != records[0].case_id)
    handed.add(records[0], cases[other.case_id])
    assert loaded == [records[0].case_id]
