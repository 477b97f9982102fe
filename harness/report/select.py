"""Which results the page embeds for drill-down: every failure first, then a sample, within a fixed budget.

A report of 100k results cannot carry every record; it carries at most
`limit`, chosen in one pass with bounded memory. The order is stable: the
sample is by a hash of the case id, so the same cases are picked for every
variant and a rerun picks the same ones.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.run.log import RecordSummary
from harness.score.outcome import CATEGORY_NAMES, RIGHT, is_failure
from harness.score.outcome import category as outcome_category

__all__ = ["CATEGORY_NAMES", "RIGHT", "Selector", "category", "is_failure"]

DEFAULT_LIMIT = 2000
RIGHT_SHARE = 0.1  # at least this share of the budget shows results that went right, when there are any


def category(record: RecordSummary, conformance_failed: bool) -> int:
    """The outcome category of one result record."""
    return outcome_category(record.outcome, record.kind, conformance_failed)


def case_order(case_id: str) -> int:
    """A stable pseudo-random order of cases (the same for every variant)."""
    return int.from_bytes(hashlib.blake2b(case_id.encode(), digest_size=8).digest(), "big")


@dataclass
class Selector:
    """Keeps the `limit` best (failures first, by case hash) results of a stream, plus the counts."""

    limit: int = DEFAULT_LIMIT
    seen: int = 0
    failures: int = 0
    counts: dict[int, int] = field(default_factory=dict)
    _fail: list[tuple[Any, ...]] = field(default_factory=list)
    _right: list[tuple[Any, ...]] = field(default_factory=list)
    _order: dict[str, int] = field(default_factory=dict)

    def offer(self, case_id: str, variant: str, epoch: int, cat: int, payload: Any) -> None:
        """Consider one result (its payload is kept if picked); at most `limit` failures and `limit` others are held."""
        self.seen += 1
        self.counts[cat] = self.counts.get(cat, 0) + 1
        order = self._order.get(case_id)
        if order is None:
            order = self._order[case_id] = case_order(case_id)
        key = (cat, order, variant, epoch)
        heap = self._fail if is_failure(cat) else self._right
        self.failures += is_failure(cat)
        item = (_neg(key), self.seen, payload)
        if len(heap) < self.limit:
            heapq.heappush(heap, item)
        elif item[0] > heap[0][0]:
            heapq.heapreplace(heap, item)

    def chosen(self) -> list[tuple[int, Any]]:
        """The picked records with their category, failures first then the sample, in a stable order."""
        fails = sorted(self._fail, key=lambda it: _unneg(it[0]))
        rights = sorted(self._right, key=lambda it: _unneg(it[0]))
        right_quota = min(len(rights), max(self.limit - len(fails), int(self.limit * RIGHT_SHARE)))
        fail_quota = min(len(fails), self.limit - right_quota)
        picked = fails[:fail_quota] + rights[:right_quota]
        return [(_unneg(it[0])[0], it[2]) for it in picked]

    def describe(self) -> dict[str, Any]:
        """What was embedded against what exists, for the sentence on the page."""
        picked = self.chosen()
        return {
            "results": self.seen,
            "embedded": len(picked),
            "failures": self.failures,
            "failures_embedded": sum(1 for cat, _ in picked if is_failure(cat)),
            "complete": len(picked) == self.seen,
            "limit": self.limit,
            "by_category": {CATEGORY_NAMES[c]: n for c, n in sorted(self.counts.items())},
        }


def _neg(key: tuple[int, int, str, int]) -> tuple[Any, ...]:
    """Turn an ascending key into one a min-heap keeps the *smallest* of (the root is the worst kept)."""
    return (-key[0], -key[1], _Rev(key[2]), -key[3])


def _unneg(key: Sequence[Any]) -> tuple[int, int, str, int]:
    return (-key[0], -key[1], key[2].value, -key[3])


class _Rev:
    """A string that sorts in reverse, for the heap key."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Rev) -> bool:
        return self.value > other.value

    def __gt__(self, other: _Rev) -> bool:
        return self.value < other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rev) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)
