"""The run log's read model: one typed view of a run folder (or of records in memory) for scoring and the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.corpus.schema import Case
from harness.run.caseref import CaseRef
from harness.run.folder import RESULTS_FILE, RunFileError, read_cases, read_manifest, read_results
from harness.run.log import RESULTS_SCHEMA
from harness.run.runlog import RunLog
from harness.score.scoring import GateSettings, score_log, score_run
from tests.run.test_folder import V1_RUN

SCORED = ("summary.json", "outcomes.jsonl", "junit.xml")


def _copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(V1_RUN, run)
    for name in SCORED:
        (run / name).unlink(missing_ok=True)
    return run


def _as_v2(run: Path) -> list[str]:
    """The folder's records rewritten as the v2 code writes them (each with its stored outcome)."""
    lines = [r.model_dump_json() for r in read_results(run)]
    (run / RESULTS_FILE).write_text("\n".join(lines) + "\n")
    return lines


def test_v1_records_are_read_upgraded_in_unit_key_order_with_an_outcome(tmp_path: Path) -> None:
    log = RunLog.read(_copy(tmp_path))
    records = list(log.records())
    assert len(log) == len(records) == 20
    assert [r.key for r in records] == sorted(r.key for r in records) == log.keys()
    assert {r.schema_version for r in records} == {RESULTS_SCHEMA}
    assert all(r.outcome is not None for r in records)
    assert log.record(records[3].key) == records[3]
    with pytest.raises(KeyError):
        log.record(("no-such-case", "", "", 1))


def test_a_retried_unit_keeps_its_last_record(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    lines = _as_v2(run)
    redone = json.loads(lines[7])
    redone.update(error="timeout: redone", outcome=None)
    (run / RESULTS_FILE).write_text("\n".join([*lines, json.dumps(redone)]) + "\n")
    log = RunLog.read(run)
    assert len(log) == 20
    record = log.record((redone["case_id"], redone["case_hash"], redone["variant"], redone["epoch"]))
    assert record.error == "timeout: redone" and record.outcome is not None and not record.outcome.scored


def test_the_stored_outcome_is_read_not_judged_again(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    lines = _as_v2(run)
    row = next(json.loads(line) for line in lines if json.loads(line)["kind"] == "quality")
    judged = row["outcome"]["verdict_correct"]
    row["outcome"]["verdict_correct"] = not judged  # a judgement the facts would not give: the stored one must stand
    (run / RESULTS_FILE).write_text("\n".join([*lines, json.dumps(row)]) + "\n")
    record = RunLog.read(run).record((row["case_id"], row["case_hash"], row["variant"], row["epoch"]))
    assert record.outcome is not None and record.outcome.verdict_correct is (not judged)


def test_a_torn_last_line_is_no_record_and_no_error(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    lines = _as_v2(run)
    (run / RESULTS_FILE).write_text("\n".join(lines) + "\n" + lines[0][: len(lines[0]) // 2])
    log = RunLog.read(run)
    assert len(log) == 20 and len(list(log.records())) == 20


def test_a_corrupt_line_is_named_with_its_file_and_number(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    lines = (run / RESULTS_FILE).read_text().splitlines()
    lines[3] = '{"case_id": "x"}'
    (run / RESULTS_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(RunFileError) as err:
        list(RunLog.read(run).records())
    assert err.value.line == 4 and err.value.path == run / RESULTS_FILE


def test_a_case_is_validated_once_and_kept(tmp_path: Path) -> None:
    log = RunLog.read(_copy(tmp_path))
    cid, other = log.keys()[0][0], log.keys()[-1][0]
    case = log.case(cid)
    assert case is not None and case.id == cid and cid != other
    assert log.case(other) is not None and log.case(cid) is case
    assert log.case("no-such-case") is None


def test_a_log_in_memory_scores_to_the_same_bytes_as_the_folder(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    score_run(run, GateSettings())
    written = {name: (run / name).read_bytes() for name in SCORED}
    records = list(reversed(read_results(run)))  # in any order: the log sorts them by unit key
    memory = RunLog.of(read_manifest(run), records, _cases(run))
    out = tmp_path / "memory"
    out.mkdir()
    score_log(memory, GateSettings(), out)
    assert {name: (out / name).read_bytes() for name in SCORED} == written
    with pytest.raises(ValueError, match="run folder"):
        score_log(memory, GateSettings())


def _cases(run: Path) -> dict[str, Case | CaseRef]:
    return {cid: Case.model_validate(data) for cid, data in read_cases(run).items()}
