"""What the mutation suite is made of: a seeded change to the bundled SUT, tagged with the requirement it touches.

A fault breaks one requirement (`vbench certify` must fail it); a correct variant changes only what the
spec leaves free (it must certify). `apply` patches the SUT inside its own process (tests/kit/faulty_sut.py);
a variant may instead name an `Encoding` a re-encoding proxy applies between the kit and the plain SUT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.system import store


@dataclass(frozen=True)
class Seed:
    name: str
    requirement: str
    """The id in harness/kit/requirements.py this seed breaks (a fault) or leaves intact (a variant)."""
    what: str
    apply: Callable[[], None] | None = None
    """Patch the SUT process; None: the plain SUT (behind a proxy when `encoding` is set)."""
    encoding: Any = None
    """A tests.kit.reencode.Encoding the proxy applies (variants only)."""
    kit_gap: str | None = None
    """A fault the kit is known not to catch yet: the check it lacks (the suite reports it apart, and its test
    is a strict xfail, so it turns red the day the kit catches it)."""


def persisted_fault(change: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    """Change the whole `self_evaluation` after the system wrote it, and persist the changed one."""

    def apply() -> None:
        original = store.Store.write_verifier_evaluation

        def write(self: store.Store, session_id: str, evaluation: Any) -> dict[str, Any]:
            merged = original(self, session_id, evaluation)
            change(merged)
            with self._transaction() as conn:
                conn.execute(store._UPDATE_EVALUATION, {"b_session": session_id, "self_evaluation": merged})
            return merged

        store.Store.write_verifier_evaluation = write  # type: ignore[method-assign]

    return apply


def evaluation_fault(change: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    """Change the persisted `verifier_evaluation` (as a team whose persistence code gets one field wrong)."""
    return persisted_fault(lambda merged: change(merged[store.EVALUATION_KEY]))
