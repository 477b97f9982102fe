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
