"""The run log: every record is on disk once written, and a torn tail never corrupts what follows."""

from __future__ import annotations

import json
from pathlib import Path

from harness.run.folder import RESULTS_FILE, ResultWriter, read_results
from harness.run.log import Gold, GoldSummary, RecordSummary, ResultRecord
from harness.run.outcome import judged_outcome


def record(case_id: str, error: str | None = None, verdict: str = "PASS") -> ResultRecord:
    gold = Gold(parse_status="valid", gatekeeper={}, claims=None, verdict=["PASS"], model_verdict=None)
    return ResultRecord(
        case_id=case_id, case_hash="h", kind="quality", variant="v", epoch=1, dataset="d", tags=[], spec=[],
        parse_status="valid", gatekeeper=None, claims={}, model_verdict=None, verdict=verdict, error=error, gold=gold,
    )  # fmt: skip


def test_a_written_record_is_on_disk_before_the_writer_closes(tmp_path: Path) -> None:
    writer = ResultWriter(tmp_path)
    writer.write(record("a"))
    # read through another handle while the writer is still open, as after a kill -9
    assert [r.case_id for r in read_results(tmp_path)] == ["a"]
    writer.close()


def test_a_torn_tail_is_cut_before_appending(tmp_path: Path) -> None:
    with ResultWriter(tmp_path) as writer:
        writer.write(record("a"))
    path = tmp_path / RESULTS_FILE
    with path.open("a") as fh:
        fh.write(record("b").model_dump_json()[:40])  # a kill in the middle of a line
    assert [r.case_id for r in read_results(tmp_path)] == ["a"]
    with ResultWriter(tmp_path) as writer:
        writer.write(record("c"))
    assert [r.case_id for r in read_results(tmp_path)] == ["a", "c"]
    assert path.read_text().count("\n") == 2


def test_the_last_record_of_a_key_wins(tmp_path: Path) -> None:
    with ResultWriter(tmp_path) as writer:
        writer.write(record("a", error="timeout", verdict="LOW_CONFID"))
        writer.write(record("b"))
        writer.write(record("a"))  # a resumed run redid it
    records = read_results(tmp_path)
    assert [(r.case_id, r.error) for r in records] == [("b", None), ("a", None)]


def test_a_record_summary_is_the_record_s_own_fields_and_outcome() -> None:
    """The summary readers of every result parse is a projection of the record, not a second schema: each of its
    fields is the record's of the same alias, read from the same line to the same value, and its outcome is the
    record's, stored or (for a line written before records carried one) judged from the same facts."""
    for part, whole in ((RecordSummary, ResultRecord), (GoldSummary, Gold)):
        aliases = {f.alias or n: n for n, f in whole.model_fields.items()}
        assert {f.alias or n for n, f in part.model_fields.items()} <= set(aliases), part.__name__
    gold = Gold(
        parse_status="valid", gatekeeper={}, claims={"C1": ["supported"], "C2": ["unsupported"]},
        verdict=["REJECT"], model_verdict=["PASS"],
    )  # fmt: skip
    made = ResultRecord(
        case_id="q", case_hash="h", kind="quality", variant="v", epoch=2, dataset="d", tags=[], spec=["S1"],
        parse_status="valid", gatekeeper=None, claims={"C1": "supported", "C2": "supported"}, model_verdict="REJECT",
        verdict="LOW_CONFID", error=None, gold=gold, trace_from_case=True, perturbation=None,
    )  # fmt: skip
    line = made.model_dump_json()
    summary = RecordSummary.model_validate_json(line)
    for name, field in RecordSummary.model_fields.items():
        mine, theirs = getattr(summary, name), getattr(made, field.alias or name)
        if name == "gold":
            assert mine.model_dump() == {k: getattr(theirs, k) for k in GoldSummary.model_fields}
        else:
            assert mine == theirs, name
    judged = judged_outcome(made.outcome, made.facts)
    assert summary.outcome == judged and summary.outcome.mismatches == judged.mismatches
    assert judged.model_verdict_correct and len(judged.mismatches) == 3  # the verdict, the model verdict and C2
    old = json.loads(line)
    del old["outcome"]  # a folder written before records carried their outcome
    assert RecordSummary.model_validate(old).outcome == judged_outcome(None, made.facts) == judged
