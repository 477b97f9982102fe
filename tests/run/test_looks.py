"""A --stop-early run's units in looks: each case's units in its look, policy units first, unknown cases refused."""

from __future__ import annotations

import pytest

from harness.run.caseref import CaseRef
from harness.run.log import VariantInfo
from harness.run.looks import EarlyStop, split_into_looks, stop_record
from harness.run.schedule import Task


def _task(case_id: str, kind: str = "quality", variant: str | None = "a") -> Task:
    info = VariantInfo(name=variant, model="m", prompt="p") if variant else None
    return Task(case=CaseRef.from_json(case_id, kind, f"h-{case_id}", b"{}"), variant=info, epoch=1)  # type: ignore[arg-type]


def test_units_go_in_the_look_of_their_case_and_policy_units_first() -> None:
    early = EarlyStop(order=["c", "a", "b"], marks=[2, 3], check=lambda k: {"stop": False})
    tasks = [_task("a"), _task("b"), _task("c"), _task("a", variant="x"), _task("p", "policy", None)]
    looks = split_into_looks(tasks, early)
    assert [[(t.case.id, t.variant_name) for t in look] for look in looks] == [
        [("a", "a"), ("c", "a"), ("a", "x"), ("p", "policy")],
        [("b", "a")],
    ]
    record = stop_record({"look": 1, "stop": True}, looks)
    assert (record["requests_planned"], record["requests_sent"], record["requests_saved"]) == (4, 3, 1)


def test_a_case_outside_the_order_is_refused() -> None:
    early = EarlyStop(order=["a"], marks=[1], check=lambda k: {"stop": False})
    with pytest.raises(ValueError, match="case z is not in the early-stopping order"):
        split_into_looks([_task("z")], early)
