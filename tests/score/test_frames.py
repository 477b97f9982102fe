"""Frame rows: made once per record from its outcome, the same whether their lists are shared or copied."""

from __future__ import annotations

from harness.score.frames import SharedLists, claim_rows, quality_row
from harness.score.outcome import record_outcome
from tests.report.builders import record


def test_shared_lists_give_the_same_rows_and_one_list_per_value() -> None:
    lists = SharedLists()
    records = [
        record("c1", "v", 1, tags=["t1"], gold_claims={"C1": ["direct_observation"]}),
        record("c1", "w", 1, tags=["t1"], gold_claims={"C1": ["direct_observation"]}),
        record("c2", "v", 1, tags=["t2"], gold_claims={"C1": ["unsupported", "overstated"]}),
    ]
    shared = [quality_row(r, record_outcome(r), lists) for r in records]
    claims = [row for r in records for row in claim_rows(r, record_outcome(r), lists)]
    assert shared == [quality_row(r, record_outcome(r)) for r in records]
    assert claims == [row for r in records for row in claim_rows(r, record_outcome(r))]
    assert shared[0]["tags"] is shared[1]["tags"] and shared[0]["tags"] is not shared[2]["tags"]
    assert shared[2]["tags"] == ["t2"] and claims[2]["gold"] == ["unsupported", "overstated"]
    assert claims[0]["gold"] is claims[1]["gold"] and claims[0]["gold"] is not records[0].gold.claims["C1"]


def test_the_frames_do_not_depend_on_where_the_chunks_fall(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A chunk that ends the log exactly, or holds no row of a kind, must not turn the columns into objects."""
    import pandas as pd

    from harness.cli import main
    from harness.run.runlog import RunLog
    from harness.score import scoring
    from tests.run.corpus_builder import write_corpus

    out = tmp_path / "run"
    assert main(["run", "--cases", str(write_corpus(tmp_path / "cases")), "--epochs", "2", "--no-cache",
                 "--no-report", "--out", str(out)]) in (0, 1)  # fmt: skip
    log = RunLog.read(out)
    whole = scoring.read_log_frames(log, False)
    assert whole.headline == 15 and whole.quality["epoch"].dtype.kind == "i"
    for chunk in (1, 3, 5, 15):  # 1: chunks of one policy record; 5 and 15 end exactly on the log's end
        monkeypatch.setattr(scoring, "CHUNK", chunk)
        cut = scoring.read_log_frames(log, False)
        for name in ("quality", "claims", "outcomes"):
            pd.testing.assert_frame_equal(getattr(cut, name), getattr(whole, name))
