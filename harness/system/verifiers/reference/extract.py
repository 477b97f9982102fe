"""All features of one text: mentions, dates, times, quantities, and what is left after blanking them."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.system.verifiers.reference.mentions import Mention, extract_mentions
from harness.system.verifiers.reference.quantities import Quantity, extract_quantities
from harness.system.verifiers.reference.times import ClockTime, extract_times

__all__ = ["ClockTime", "Features", "Mention", "Quantity", "features"]


@dataclass(frozen=True, slots=True)
class Features:
    mentions: tuple[Mention, ...] = ()
    quantities: tuple[Quantity, ...] = ()
    times: tuple[ClockTime, ...] = ()
    masked: str = field(default="", repr=False)


def features(text: str) -> Features:
    """Times and dates first, then identifiers and codes, then numbers from what is left."""
    times, dates, spans, masked = extract_times(text)
    mentions, masked = extract_mentions(masked)
    quantities = extract_quantities(masked) + spans
    return Features(tuple(dates + mentions), tuple(quantities), tuple(times), masked)
