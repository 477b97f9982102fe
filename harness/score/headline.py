"""Which results count in the headline figures: the one predicate every reader of a run log calls.

A robustness unit (a quality case run under a perturbation, `harness.corpus.perturb`) feeds only the
`robustness` figures. The headline metrics, comparisons, gates, decisions, conformance, outcomes.jsonl,
junit and the report's case list read only the results this predicate keeps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class HasPerturbation(Protocol):
    @property
    def perturbation(self) -> str | None: ...


R = TypeVar("R", bound=HasPerturbation)


def is_headline(record: HasPerturbation) -> bool:
    """True for a result of the case as written; False for a perturbed (robustness) unit."""
    return record.perturbation is None


def headline_records(records: Iterable[R]) -> list[R]:
    """The results the headline figures are computed from."""
    return [r for r in records if is_headline(r)]
