"""A result is judged once, when its record is made: every results.jsonl line carries its outcome, a line from an
older run folder is judged as it is read, and scoring and the report read the stored judgement."""

from __future__ import annotations

import json
from pathlib import Path

from harness.report.analyses import quality_mismatches
from harness.run.folder import RESULTS_FILE, ResultWriter, read_results
from harness.run.log import Gold, RecordSummary, ResultRecord
from harness.score.frames import quality_frame
from harness.score.outcome import outcome, record_outcome

GOLD = Gold(
    parse_status="valid", gatekeeper={}, claims={"C1": ["contradicted"]}, verdict=["REJECT"], model_verdict=None
)


def record(case_id: str, verdict: str, claims: dict[str, str], error: str | None = None) -> ResultRecord:
    return ResultRecord(
        case_id=case_id, case_hash="h", kind="quality", variant="v", epoch=1, dataset="d", tags=[], spec=[],
        parse_status="valid", gatekeeper=None, claims=claims, model_verdict=None, verdict=verdict, error=error,
        gold=GOLD,
    )  # fmt: skip


RECORDS = [
    record("right", "REJECT", {"C1": "contradicted"}),
    record("unsafe", "PASS", {"C1": "direct_observation"}),
    record("error", "PASS", {}, error="timeout: no reply"),
]


def lines(tmp_path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (tmp_path / RESULTS_FILE).read_text().splitlines()]


def test_every_line_carries_the_outcome_judged_when_the_record_was_made(tmp_path: Path) -> None:
    with ResultWriter(tmp_path) as writer:
        for r in RECORDS:
            writer.write(r)
    stored = {line["case_id"]: line["outcome"] for line in lines(tmp_path)}
    assert stored["right"] == {
        "scored": True, "verdict_correct": True, "model_verdict_correct": False, "unsafe_eligible": True,
        "unsafe_pass": False, "claims_wrong": [], "claims_total": 1,
    }  # fmt: skip
    assert (stored["unsafe"]["unsafe_pass"], stored["unsafe"]["claims_wrong"]) == (True, ["C1"])
    assert (stored["error"]["scored"], stored["error"]["verdict_correct"]) == (False, False)


def test_a_line_written_without_an_outcome_is_judged_as_it_is_read(tmp_path: Path) -> None:
    """An older run folder: its lines have no `outcome` key, and read exactly as the rule judges them."""
    old = [{k: v for k, v in json.loads(r.model_dump_json()).items() if k != "outcome"} for r in RECORDS]
    (tmp_path / RESULTS_FILE).write_text("".join(json.dumps(line) + "\n" for line in old))
    for r, line in zip(read_results(tmp_path), old, strict=True):
        expected = outcome(
            error=r.error, verdict=r.verdict, model_verdict=r.model_verdict, claims=r.claims,
            gold_verdicts=r.gold.verdict, gold_claims=r.gold.claims,
        )  # fmt: skip
        assert record_outcome(r) == expected
        assert RecordSummary.model_validate(line).outcome == expected  # the report's projection of the same line


def test_scoring_and_the_report_read_the_stored_judgement_and_never_judge_again(tmp_path: Path) -> None:
    """A line whose stored outcome disagrees with the rule: every reader follows the stored one."""
    line = json.loads(RECORDS[0].model_dump_json())
    line["outcome"] = {**line["outcome"], "verdict_correct": False}  # what the run judged, whatever the rule says
    (tmp_path / RESULTS_FILE).write_text(json.dumps(line) + "\n")
    (read,) = read_results(tmp_path)
    assert record_outcome(read).verdict_correct is False
    assert quality_frame([read])["verdict_correct"].tolist() == [False]
    assert RecordSummary.model_validate(line).outcome.verdict_correct is False
    assert quality_mismatches(line) == ['verdict: expected ["REJECT"], got REJECT']
