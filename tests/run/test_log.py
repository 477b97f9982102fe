"""The run log: every record is on disk once written, and a torn tail never corrupts what follows."""

from __future__ import annotations

from pathlib import Path

from harness.run.folder import RESULTS_FILE, ResultsFollower, ResultWriter, read_results
from harness.run.log import Gold, ResultRecord


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


def _ids(lines: list[bytes]) -> list[str]:
    return [ResultRecord.model_validate_json(line).case_id for line in lines]


def test_a_follower_reads_each_whole_line_once_as_the_writer_appends_it(tmp_path: Path) -> None:
    """Another process reads the log while the run writes it: a line is handed out once, and only when whole."""
    follower = ResultsFollower(tmp_path / RESULTS_FILE)
    assert follower.new_lines() == []  # the writer has not made the file yet
    with ResultWriter(tmp_path) as writer:
        writer.write(record("a"))
        assert _ids(follower.new_lines()) == ["a"]
        assert follower.new_lines() == []
        line = record("b").model_dump_json()
        with (tmp_path / RESULTS_FILE).open("a") as fh:
            fh.write(line[:30])  # half written
        assert follower.new_lines() == []
        with (tmp_path / RESULTS_FILE).open("a") as fh:
            fh.write(line[30:] + "\n")
        writer.write(record("c"))
        assert _ids(follower.new_lines()) == ["b", "c"]
    follower.close()


def test_a_follower_reads_what_replaces_a_torn_tail(tmp_path: Path) -> None:
    """A resumed run cuts off the torn tail of a kill and appends in its place: the follower, which saw the torn
    bytes, reads the new lines from where the last whole line ended."""
    with ResultWriter(tmp_path) as writer:
        writer.write(record("a"))
    with (tmp_path / RESULTS_FILE).open("a") as fh:
        fh.write(record("torn").model_dump_json()[:60])
    follower = ResultsFollower(tmp_path / RESULTS_FILE)
    assert _ids(follower.new_lines()) == ["a"]
    with ResultWriter(tmp_path) as writer:  # cuts the tail
        writer.write(record("b"))
    assert _ids(follower.new_lines()) == ["b"]
    follower.close()
