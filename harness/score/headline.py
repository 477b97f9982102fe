"""Which results count in the headline figures: the one predicate every reader of a run log calls.

A robustness unit (a quality case run under a perturbation, `harness.corpus.perturb`) feeds only the
`robustness` figures; an unscored case (an imported session a run answers as a judge for `vbench estimate`)
feeds none. The headline metrics, comparisons, gates, decisions, conformance, outcomes.jsonl,
junit and the report's case list read only the results this predicate keeps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class HasGoldVerdict(Protocol):
    @property
    def verdict(self) -> list[str]: ...


class HasPerturbation(Protocol):
    @property
    def perturbation(self) -> str | None: ...

    @property
    def gold(self) -> HasGoldVerdict: ...


R = TypeVar("R", bound=HasPerturbation)


def is_headline(record: HasPerturbation) -> bool:
    """True for a result of the case as written; False for a perturbed (robustness) unit and for an unscored
    case's (an imported session without labels: no acceptable verdict, `corpus.sessions.unscored_case_data`)."""
    return record.perturbation is None and bool(record.gold.verdict)


def headline_records(records: Iterable[R]) -> list[R]:
    """The results the headline figures are computed from."""
    return [r for r in records if is_headline(r)]
