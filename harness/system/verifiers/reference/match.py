"""Matching a claim's numbers, times and identifiers against the cited evidence.

Each function answers one of: found (as written), derived (computable from the
evidence by one arithmetic step), conflict (the evidence shows a different
value for the same slot, returned so the reason can quote it), or absent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Literal

from harness.system.verifiers.reference.extract import ClockTime, Mention, Quantity

Status = Literal["found", "derived", "conflict", "absent"]
REL_TOLERANCE = 0.005
APPROX_TOLERANCE = 0.12
MAX_DERIVED_INPUTS = 24


@dataclass(frozen=True)
class Finding:
    status: Status
    other: str | None = None
    label: str = ""


def _values(q: Quantity) -> tuple[float, ...]:
    return (q.value,) if q.alt_value is None else (q.value, q.alt_value)


def value_matches(claim: Quantity, value: float) -> bool:
    """Does an evidence value satisfy the claim's number, its rounding and its comparison word?"""
    for c in _values(claim):
        if claim.op == ">" and value > c * (1 - REL_TOLERANCE):
            return True
        if claim.op == "<" and value < c * (1 + REL_TOLERANCE):
            return True
        if claim.op == "~" and abs(value - c) <= max(APPROX_TOLERANCE * abs(c), claim.step):
            return True
        if claim.op == "=" and abs(value - c) <= max(claim.step / 2 * 1.0001, REL_TOLERANCE * abs(c)):
            return True
    return False


def compatible(claim: Quantity, ev: Quantity) -> bool:
    """Same kind of quantity: same dimension, or a bare count compared on the number as written."""
    return claim.dimension == ev.dimension or claim.dimension == "count"


def quantity_found(claim: Quantity, ev: Quantity) -> bool:
    if claim.dimension == ev.dimension:
        return any(value_matches(claim, v) for v in _values(ev))
    if claim.dimension == "count":
        return value_matches(claim, ev.number)
    if claim.dimension == "percent" and ev.dimension == "count" and 0 <= ev.value <= 1:
        return value_matches(claim, ev.value * 100)
    return False


def derived_quantities(
    quantities: Sequence[Quantity], times: Sequence[ClockTime], counts: Iterable[int]
) -> list[Quantity]:
    """Values one step away from the evidence: shares, ratios, differences, spans between times, counts."""
    qs = list(quantities)[:MAX_DERIVED_INPUTS]
    out: list[Quantity] = []
    for a, b in permutations(qs, 2):
        if a.dimension != b.dimension or b.value == 0:
            continue
        if 0 < a.value < b.value:
            out.append(Quantity(a.value / b.value * 100, "percent", f"{a.raw}/{b.raw}", number=a.value / b.value * 100))
            out.append(Quantity(b.value - a.value, a.dimension, f"{b.raw}-{a.raw}", number=b.value - a.value))
        if a.value > b.value > 0:
            out.append(Quantity(a.value / b.value, "factor", f"{a.raw}/{b.raw}", number=a.value / b.value))
            pct = (a.value - b.value) / b.value * 100
            out.append(Quantity(pct, "percent", f"({a.raw}-{b.raw})/{b.raw}", number=pct))
    minutes = sorted({t.minute for t in times})
    for i, x in enumerate(minutes):
        for y in minutes[i + 1 :]:
            out.append(Quantity((y - x) * 60.0, "duration", f"{y - x} min between times", number=(y - x) * 60.0))
    out.extend(Quantity(float(n), "count", f"{n} listed", number=float(n)) for n in counts if n > 0)
    return out


def match_quantity(claim: Quantity, evidence: Sequence[Quantity], derived: Sequence[Quantity]) -> Finding:
    """Found, derived, conflict (same dimension and overlapping label, different value) or absent."""
    if any(quantity_found(claim, ev) for ev in evidence):
        return Finding("found")
    if any(quantity_found(claim, d) for d in derived if d.dimension == claim.dimension or claim.dimension == "count"):
        return Finding("derived")
    same = [ev for ev in evidence if ev.dimension == claim.dimension]
    if not same:
        return Finding("absent")
    scored = sorted(same, key=lambda ev: len(claim.label & ev.label), reverse=True)
    best = scored[0]
    overlap = claim.label & best.label
    if overlap or (claim.dimension != "count" and len(same) <= 3):
        return Finding("conflict", best.raw, " ".join(sorted(overlap)))
    return Finding("absent")


TIME_TOLERANCE = {"at": 1, "since": 5, "until": 5, "approx": 10}


def match_time(claim: ClockTime, evidence: Sequence[ClockTime]) -> Finding:
    """A clock time matches within a tolerance set by its wording (`at` 1 min, `since` 5, `around` 10)."""
    if not evidence:
        return Finding("absent")
    tolerance = TIME_TOLERANCE.get(claim.relation, 1)
    nearest = min(evidence, key=lambda t: abs(t.minute - claim.minute))
    if abs(nearest.minute - claim.minute) <= tolerance:
        return Finding("found")
    return Finding("conflict", nearest.raw)


_SLOT = {"http_class": "http"}


def _slot(m: Mention) -> str:
    return f"{m.kind}:{_SLOT.get(m.family, m.family)}" if m.kind == "code" else m.kind


def mention_present(m: Mention, evidence: Sequence[Mention], lower: str, stems: frozenset[str]) -> bool:
    """The identifier or code occurs in the evidence, as an extracted mention or in the text."""
    if m.family == "http_class":
        return m.value in lower or any(e.family == "http" and e.value[0] == m.value[0] for e in evidence)
    if m.family == "exit":
        return any(e.value == m.value for e in evidence) or m.value.split()[1] in lower.split()
    if m.kind == "code" and m.family == "k8s":
        return m.value in lower or m.value.rstrip("ed") in stems
    return m.value.lower() in lower


def _alternative_fits(m: Mention, other: Mention) -> bool:
    if m.kind == "service":
        if other.kind not in ("service", "pod", "instance"):
            return False
        head, tail = m.value.split("-")[0], m.value.split("-")[-1]
        name = other.family if other.kind in ("pod", "instance") else other.value
        parts = name.split("-")
        return bool(parts) and (parts[0] == head or parts[-1] == tail) and not m.value.startswith(name)
    if m.kind == "instance":
        return other.kind == "instance" and (
            other.family == m.family or other.value.split("-")[0] == m.value.split("-")[0]
        )
    if m.family == "http_class":
        return other.family == "http" and other.value[0] != m.value[0]
    return _slot(other) == _slot(m)


def match_mention(
    m: Mention, claim: Sequence[Mention], evidence: Sequence[Mention], lower: str, stems: frozenset[str]
) -> Finding:
    """Found; conflict when the evidence names a different one of the same kind (a swap); else absent."""
    if mention_present(m, evidence, lower, stems):
        return Finding("found")
    claimed = {c.value for c in claim}
    for other in evidence:
        if other.value not in claimed and _alternative_fits(m, other) and other.value not in m.value:
            return Finding("conflict", other.value)
    return Finding("absent")
