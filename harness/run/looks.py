"""Early stopping's side of a run: the work units in looks, and the stop record.

The rule that decides at each look is the score layer's (`harness.score.sequential`); the caller hands it in
as an `EarlyStop`, so a run sends cases in the rule's order, look by look, and stops when it says so. Policy
units (no model request) go in the first look. (A study refuses early stopping with perturbations or shards.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.run.schedule import Task


@dataclass(frozen=True)
class EarlyStop:
    """How a `--stop-early` run sends its quality cases, and the rule it checks after each look."""

    order: Sequence[str]
    """Quality case ids in the order they are sent."""
    marks: Sequence[int]
    """After how many cases of `order` each look comes (the last is len(order))."""
    check: Callable[[int], dict[str, Any]]
    """After look k (1-based), with its records written: the look's record; its "stop" says whether to stop."""


def split_into_looks(tasks: Sequence[Task], early: EarlyStop) -> list[list[Task]]:
    """The units of each look, in order; a quality case not in `order` is refused (the rule never saw it)."""
    look_of: dict[str, int] = {}
    start = 0
    for k, mark in enumerate(early.marks):
        for case_id in early.order[start:mark]:
            look_of[case_id] = k
        start = mark
    looks: list[list[Task]] = [[] for _ in early.marks]
    for task in tasks:
        if task.variant is None:
            looks[0].append(task)
            continue
        case_id = task.case.id
        if case_id not in look_of:
            raise ValueError(f"case {case_id} is not in the early-stopping order")
        looks[look_of[case_id]].append(task)
    return looks


def model_units(looks: Sequence[Sequence[Task]]) -> int:
    """The units that send a model request (policy units answer from their script)."""
    return sum(1 for look in looks for task in look if task.variant is not None)


def stop_record(look: dict[str, Any], looks: Sequence[Sequence[Task]]) -> dict[str, Any]:
    """The stop as the manifest and summary keep it: the rule's look record with the requests sent and saved
    (one request per model unit sent; retries not counted)."""
    k = int(look["look"])
    planned, sent = model_units(looks), model_units(looks[:k])
    return {**look, "requests_planned": planned, "requests_sent": sent, "requests_saved": planned - sent}
