"""The named phases of a command, timed for whoever watches: the bench's phase table, never the command itself.

A command marks each phase with `phase(name)`; `watching(sink)` hands every phase that ends while it is entered
to `sink` as (name, CPU seconds, wall seconds). Unwatched, a phase costs a list check: nothing is timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PhaseSink = Callable[[str, float, float], None]
"""Gets each phase as it ends: its name, the process's CPU seconds and the wall seconds it took."""

LOAD_CASES, RUN, SCORE, CERTIFICATE, REPORT, CONSOLE = (
    "load cases",
    "run",
    "score",
    "certificate",
    "report",
    "console summary",
)
"""The phases of `vbench run`, in the order they happen."""

_sinks: list[PhaseSink] = []


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the enclosed work as the phase `name` for every watcher (a phase that raises is timed too)."""
    if not _sinks:
        yield
        return
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        yield
    finally:
        took = (time.process_time() - cpu, time.perf_counter() - wall)
        for sink in list(_sinks):
            sink(name, *took)


@contextmanager
def watching(sink: PhaseSink) -> Iterator[None]:
    """Hand `sink` every phase that ends while this is entered."""
    _sinks.append(sink)
    try:
        yield
    finally:
        _sinks.remove(sink)
