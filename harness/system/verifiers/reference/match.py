"""Matching a claim's numbers, times and identifiers against the cited evidence.

Each function answers: found (as written, or in another unit), derived (one
arithmetic step from the evidence), conflict (the evidence shows a different
value for the same slot: returned so the reason can quote it), or absent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from harness.system.verifiers.reference.mentions import Mention
from harness.system.verifiers.reference.quantities import Quantity
from harness.system.verifiers.reference.times import ClockTime

Status = Literal["found", "derived", "conflict", "absent"]
REL_TOLERANCE = 0.005
APPROX_TOLERANCE = 0.12
MAX_DERIVED_INPUTS = 24
TIME_TOLERANCE = {"at": 1, "since": 5, "until": 5, "approx": 10}


@dataclass(frozen=True)
class Finding:
    status: Status
    other: str | None = None
    label: str = ""


# --- numbers -------------------------------------------------------------------------


def value_matches(claim: Quantity, value: float, base: float) -> bool:
    """Does `value` satisfy the claimed `base` (one reading of the claim) with its rounding and comparison word?"""
    step = 10.0**-claim.decimals * (abs(base / claim.number) if claim.number else 1.0)
    if claim.op == ">":
        return value > base * (1 - REL_TOLERANCE)
    if claim.op == "<":
        return value < base * (1 + REL_TOLERANCE)
    if claim.op == "~":
        return abs(value - base) <= max(APPROX_TOLERANCE * abs(base), step)
    return abs(value - base) <= max(step / 2 * 1.0001, REL_TOLERANCE * abs(base))


def quantity_found(claim: Quantity, ev: Quantity) -> bool:
    """Same dimension in any reading; or a bare evidence number read in the claim's unit or in base units."""
    for dim, base in claim.readings:
        for edim, value in ev.readings:
            if dim == edim and value_matches(claim, value, base):
                return True
            if ev.unit:
                continue
            if edim == "count" and dim != "count":
                if value_matches(claim, ev.number, claim.number) or value_matches(claim, value, base):
                    return True
                if dim == "percent" and 0 <= value <= 1 and value_matches(claim, value * 100, base):
                    return True
            if dim == "count" and value_matches(claim, ev.number, claim.number):
                return True
    return False


@dataclass(frozen=True)
class Basis:
    """What a figure may be computed from: the evidence's numbers, its time stamps, and counts of listed items."""

    quantities: tuple[Quantity, ...]
    stamps: tuple[int, ...]
    counts: frozenset[int]


def derivable(claim: Quantity, basis: Basis) -> bool:
    """Is the claimed figure one arithmetic step from the evidence (share, ratio, difference, span, count)?"""
    qs = [q for q in basis.quantities if q.value > 0][:MAX_DERIVED_INPUTS]
    for dim, base in claim.readings:
        if dim == "count" and any(value_matches(claim, float(n), base) for n in basis.counts):
            return True
        if dim == "percent" and any(
            value_matches(claim, a / b * 100, base) for a in basis.counts for b in basis.counts if 0 < a < b
        ):
            return True
        if dim == "duration":
            stamps = basis.stamps[:MAX_DERIVED_INPUTS]
            if any(value_matches(claim, (y - x) * 60.0, base) for i, x in enumerate(stamps) for y in stamps[i + 1 :]):
                return True
        for a in qs:
            for b in qs:
                if a is b or a.dimension != b.dimension:
                    continue
                if a.value < b.value and (
                    (dim == "percent" and value_matches(claim, a.value / b.value * 100, base))
                    or (dim == a.dimension and value_matches(claim, b.value - a.value, base))
                ):
                    return True
                if a.value > b.value and (
                    (dim == "factor" and value_matches(claim, a.value / b.value, base))
                    or (dim == "percent" and value_matches(claim, (a.value - b.value) / b.value * 100, base))
                ):
                    return True
    return False


def _digits(value: float, decimals: int) -> str:
    return f"{abs(value):.{max(decimals, 0)}f}".replace(".", "").lstrip("0")


def near_miss(claim: Quantity, ev: Quantity) -> bool:
    """A slip of the same figure: digits swapped, a digit dropped or added, one digit changed, the unit swapped."""
    if claim.number == 0:
        return False
    a = _digits(claim.number, claim.decimals)
    for dim, base in claim.readings:
        for edim, value in ev.readings:
            if edim == dim and ev.number == claim.number and value and not 0.5 < base / value < 2:
                return True  # 96 MB written where the evidence says 96G
            if edim != dim and edim != "count":
                continue
            written = value if edim == dim else ev.number
            if edim != dim and dim == "percent" and 0 <= written <= 1:
                written *= 100  # a bare ratio read as a percentage
            scale = base / claim.number if edim == dim else 1.0
            b = _digits(written / scale, claim.decimals)
            if a == b or len(a) < 2 or not b:
                continue
            if len(a) >= 3 and sorted(a) == sorted(b):
                return True
            ratio = written / scale / claim.number
            powers = (10.0, 100.0, 1000.0, 0.1, 0.01, 0.001)
            if (edim == dim or dim == "count") and any(abs(ratio - k) < 1e-3 * k for k in powers):
                return True
            if len(a) == len(b) >= 3 and sum(x != y for x, y in zip(a, b, strict=True)) == 1:
                return True
    return False


def match_quantity(claim: Quantity, evidence: Sequence[Quantity], basis: Basis) -> Finding:
    """Found; conflict on a near-miss figure; derived; conflict on the same label with another value; absent."""
    if any(quantity_found(claim, ev) for ev in evidence):
        return Finding("found")
    for ev in evidence:
        if near_miss(claim, ev):
            return Finding("conflict", ev.raw, "figure")
    if derivable(claim, basis):
        return Finding("derived")
    same = [ev for ev in evidence if ev.dimension == claim.dimension and ev.label]
    if same and claim.label and claim.dimension != "count":
        best = max(same, key=lambda ev: len(claim.label & ev.label))
        overlap = claim.label & best.label
        if overlap:
            return Finding("conflict", best.raw, " ".join(sorted(overlap)))
    return Finding("absent")


# --- times ---------------------------------------------------------------------------


def match_time(claim: ClockTime, evidence: Sequence[ClockTime]) -> Finding:
    """Within a tolerance set by the wording; conflict inside the evidence's time range or on an hour slip."""
    if not evidence:
        return Finding("absent")
    tolerance = TIME_TOLERANCE.get(claim.relation, 1)
    nearest = min(evidence, key=lambda t: abs(t.minute - claim.minute))
    if abs(nearest.minute - claim.minute) <= tolerance:
        return Finding("found")
    first = min(t.minute for t in evidence)
    last = max(t.minute for t in evidence)
    odd_minute = claim.minute % 15 != 0
    hour_slip = odd_minute and any(t.minute % 60 == claim.minute % 60 for t in evidence)
    if first < claim.minute < last or hour_slip:
        return Finding("conflict", nearest.raw)
    return Finding("absent", nearest.raw)


# --- identifiers ---------------------------------------------------------------------

_SLOT = {"http_class": "http"}
_SEPARATORS = re.compile(r"[\s_\-]+")


def _slot(m: Mention) -> str:
    return f"{m.kind}:{_SLOT.get(m.family, m.family)}" if m.kind == "code" else m.kind


def mention_present(m: Mention, evidence: Sequence[Mention], lower: str) -> bool:
    """The identifier or code occurs in the evidence, as an extracted mention or in the text."""
    if m.family == "http_class":
        return m.value in lower or any(e.family == "http" and e.value[0] == m.value[0] for e in evidence)
    if m.family == "exit":
        return any(e.value == m.value for e in evidence) or f" {m.value.split()[1]}" in lower
    if m.kind == "port":
        return re.search(rf"(?<![\d.]){m.value}(?!\d)", lower) is not None
    if m.kind in ("date", "version"):
        return any(e.kind == m.kind and e.value == m.value for e in evidence) or m.value in lower
    if m.kind == "code" and m.family == "k8s":  # OOMKilled and OOMKilling report the same kill
        return m.value in lower or (m.value.startswith("oomkill") and "oomkill" in lower)
    if m.kind == "symbol":
        return m.value in lower or squash(m.value) in squash(lower)
    return m.value.lower() in lower


@lru_cache(maxsize=512)
def squash(text: str) -> str:
    """Lower-case text without separators: `ReplicaSet`, `replica set` and `replica_set` compare equal."""
    return _SEPARATORS.sub("", text.lower())


def _fits(m: Mention, other: Mention) -> bool:
    """Is `other` a different value for the same slot as `m`?"""
    if m.kind == "service":
        if other.kind not in ("service", "pod"):
            return False
        name = other.family if other.kind == "pod" else other.value
        a, b = m.value.split("-"), name.split("-")
        return a[-1] == b[-1] and a[0] != b[0] and len(a) == len(b)
    if m.kind == "instance":
        return other.kind == "instance" and other.family == m.family
    if m.kind == "date":
        return other.kind == "date" and abs(_day(other.value) - _day(m.value)) <= 7
    if m.family == "http_class":
        return other.family == "http" and other.value[0] != m.value[0]
    if m.kind in ("symbol", "host", "path", "port", "name"):
        return False
    return _slot(other) == _slot(m)


def _day(value: str) -> int:
    month, day = value.split("-")
    return int(month) * 31 + int(day)


def _similarity(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def match_mention(m: Mention, claim: Sequence[Mention], evidence: Sequence[Mention], lower: str) -> Finding:
    """Found; conflict when the evidence names a different one of the same kind (a swap); else absent."""
    if mention_present(m, evidence, lower):
        return Finding("found")
    claimed = {c.value for c in claim}
    options = [o for o in evidence if o.value not in claimed and o.value not in m.value and _fits(m, o)]
    if options:
        return Finding("conflict", max(options, key=lambda o: _similarity(o.value, m.value)).value)
    return Finding("absent")
