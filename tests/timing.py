"""Time bounds that hold on a loaded machine and still catch the fault they are there for.

A deadline test knows two durations: `bound`, what the configured deadlines allow (a timeout, a cap, a number of
rounds), and `broken`, what the same section takes when the behaviour under test is missing (no timeout: the whole
slow body; no cap: the server's Retry-After). A fixed slack of a second or two added to `bound` fails when a shared
2-core machine is busy; a limit proportional to `bound` scales with what was configured instead, and it is taken
no higher than halfway between the two (their geometric mean), so a run that took as long as the broken one still
fails. A pair too close to leave room for both is refused here: such a test can tell nothing on a busy machine.
"""

from __future__ import annotations

import math

MIN_FACTOR = 2.0
"""The least slack, as a multiple of the configured bound: scheduling, connection set-up and a busy machine."""
MAX_FACTOR = 10.0
"""The most slack: beyond this the bound no longer says anything about the deadline that was configured."""


def time_limit(bound: float, broken: float) -> float:
    """The most a section whose deadlines allow `bound` seconds may take, when without the behaviour under test
    it would take `broken` seconds: `bound` times a factor between MIN_FACTOR and MAX_FACTOR, below `broken`."""
    if bound <= 0 or broken <= 0:
        raise ValueError(f"durations must be positive: bound={bound}, broken={broken}")
    limit = min(bound * MAX_FACTOR, math.sqrt(bound * broken))
    if limit < bound * MIN_FACTOR:
        raise ValueError(
            f"a bound of {bound:g} s and a broken time of {broken:g} s are too close to tell apart on a busy machine"
        )
    return limit


def assert_within(elapsed: float, bound: float, broken: float) -> None:
    """`elapsed` is within the limit `time_limit(bound, broken)` gives (see the module's docstring)."""
    limit = time_limit(bound, broken)
    assert elapsed < limit, f"took {elapsed:.2f} s; the deadlines allow {bound:g} s (limit {limit:.2f} s)"
