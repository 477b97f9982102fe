"""The run folder (issue 14): results_v2 records, the streaming readers, and v1 folders read through a migration."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.run.folder import (
    RESULTS_FILE,
    CaseIndex,
    RunFileError,
    read_cases,
    read_manifest,
    read_results,
)
from harness.run.log import RESULTS_SCHEMA, case_trace, persisted_of
from harness.run.merge import without_timings
from harness.run.runlog import RunLog
from harness.score.scoring import GateSettings, score_run
from harness.system.store import EVALUATION_KEY
from tests.score.test_registry import missing_or_changed

V1_RUN = Path(__file__).parent / "data" / "v1-run"
"""A run folder written by the results_v1 code (commit 348814b): 6 policy and 14 quality cases, reference verifier."""
MINIMAL_KEYS = ("case_id", "kind", "variant", "epoch", "parse_status", "gatekeeper", "claims", "model_verdict")
MINIMAL_KEYS += ("verdict", "error")


def test_a_v1_folder_reads_as_v2_records_with_the_minimal_keys_unchanged() -> None:
    v1_lines = [json.loads(line) for line in (V1_RUN / RESULTS_FILE).read_text().splitlines()]
    assert {line["schema_version"] for line in v1_lines} == {"results_v1"}
    records = read_results(V1_RUN)
    assert len(records) == len(v1_lines) == 20
    by_key = {(r.case_id, r.variant, r.epoch): r for r in records}
    for line in v1_lines:
        record = by_key[(line["case_id"], line["variant"], line["epoch"])]
        assert record.schema_version == RESULTS_SCHEMA
        dumped = record.model_dump(mode="json")
        assert {k: dumped[k] for k in MINIMAL_KEYS} == {k: line[k] for k in MINIMAL_KEYS}
        assert "parsed_reply" not in dumped and not record.trace_from_case
        if line["parsed_reply"] is not None and line.get("reply_status") == "valid":
            assert record.groundedness == line["parsed_reply"]["groundedness_score"]


def test_a_v1_folder_scores_to_the_summary_the_v1_code_wrote(tmp_path: Path) -> None:
    run = tmp_path / "v1"
    shutil.copytree(V1_RUN, run)
    written = json.loads((V1_RUN / "summary.json").read_text())
    again = score_run(run, GateSettings()).to_json()
    # summary.json keys are added, never renamed: every key the v1 code wrote is there with its value, except the
    # bounds of rate CIs, whose interval method changed (cluster-adjusted Wilson with a small-sample shrink)
    changed = missing_or_changed(without_timings(written), without_timings(json.loads(json.dumps(again))))
    assert [c for c in changed if "_ci[" not in c.split(":")[0]] == []
    # outcomes.jsonl keys are only added too (each unit's claims_wrong): the v1 lines are there, key for key
    lines = [json.loads(line) for line in (run / "outcomes.jsonl").read_text().splitlines()]
    assert all(isinstance(line.pop("claims_wrong"), list) for line in lines)
    assert [json.dumps(line) for line in lines] == (V1_RUN / "outcomes.jsonl").read_text().splitlines()


def test_the_run_log_gives_sorted_read_results_and_the_last_line_of_a_unit_wins(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(V1_RUN, run)
    lines = (run / RESULTS_FILE).read_text().splitlines()
    redone = json.loads(lines[7])
    redone["error"] = "timeout: redone"
    (run / RESULTS_FILE).write_text("\n".join([*lines, json.dumps(redone)]) + "\n")
    log = RunLog.read(run)
    streamed = list(log.records())
    assert [r.key for r in streamed] == sorted(r.key for r in read_results(run))
    assert len(streamed) == 20 == len(log)
    assert next(r for r in streamed if r.case_id == redone["case_id"]).error == "timeout: redone"


def test_a_corrupt_line_is_named_by_the_streaming_reader(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(V1_RUN, run)
    lines = (run / RESULTS_FILE).read_text().splitlines()
    lines[3] = '{"case_id": "x"}'
    (run / RESULTS_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(RunFileError, match=r"results.jsonl:4: not a results record"):
        list(RunLog.read(run).records())


def test_case_index_reads_one_case_at_a_time_as_read_cases_does() -> None:
    index = CaseIndex(V1_RUN)
    everything = read_cases(V1_RUN)
    assert len(index) == len(everything) == 20
    some = sorted(everything)[5]
    case = index.get(some)
    assert case is not None and case.id == some
    assert index.get("no-such-case") is None
    assert read_cases(V1_RUN, {some}) == {some: everything[some]}


def test_a_new_run_references_the_case_trace_and_restores_it_exactly(tmp_path: Path) -> None:
    """The trace summary is left out of each record and put back from cases.jsonl: the same conformance."""
    from harness.cli import main

    run = tmp_path / "new"
    assert main(["run", "--cases", str(Path(__file__).parents[2] / "cases"), "--filter", "id:q-batch-*",
                 "--filter", "id:pol-gkfail-*", "--out", str(run), "--no-cache", "--no-report"]) == 0  # fmt: skip
    manifest, index = read_manifest(run), CaseIndex(run)
    records = read_results(run)
    assert records and all(r.trace_from_case for r in records if r.persisted)
    for record in records:
        assert "tool_trace_summary" not in (record.evaluation or {})
        case = index.get(record.case_id)
        assert case is not None
        restored = persisted_of(record, case, manifest.excerpt_chars)
        assert restored is not None
        assert restored[EVALUATION_KEY]["tool_trace_summary"] == case_trace(case, manifest.excerpt_chars)
    # the same folder with every trace copied in, as v1 wrote it, scores to the same summary
    summary = json.loads((run / "summary.json").read_text())
    full = tmp_path / "full"
    shutil.copytree(run, full)
    with (full / RESULTS_FILE).open("w") as fh:
        for record in records:
            case = index.get(record.case_id)
            copy = record.model_copy(update={"persisted": persisted_of(record, case, manifest.excerpt_chars)})
            fh.write(copy.model_copy(update={"trace_from_case": False}).model_dump_json() + "\n")
    assert without_timings(score_run(full, GateSettings()).to_json()) == without_timings(summary)
    v1_size = (V1_RUN / RESULTS_FILE).stat().st_size
    assert (run / RESULTS_FILE).stat().st_size < 0.75 * v1_size  # the same 20 units, without the copies


def test_derived_files_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    from harness.run.folder import SUMMARY_FILE, read_text, write_lines, write_text

    write_text(tmp_path, SUMMARY_FILE, '{"a": 1}\n')

    def failing() -> Iterator[str]:
        yield '{"half": '
        raise RuntimeError("the writer died")

    with pytest.raises(RuntimeError):
        write_lines(tmp_path, SUMMARY_FILE, failing())
    assert read_text(tmp_path, SUMMARY_FILE) == '{"a": 1}\n'  # the old file stays whole
    assert sorted(p.name for p in tmp_path.iterdir()) == [SUMMARY_FILE]  # no temp file left behind
