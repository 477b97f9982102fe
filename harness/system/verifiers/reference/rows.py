"""Row-level checks for tables, logs and metric series: which entity or time a number belongs to.

A claim can quote a number that is in the evidence, but on another entity's
row (a swapped pod, service or table), or give an entity a value its own row
does not show, or call an old value of a series the current one, or put the
onset of a change where the series is still flat.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from statistics import median

from harness.system.verifiers.reference.evidence import EntryView
from harness.system.verifiers.reference.extract import Features, Mention, Quantity
from harness.system.verifiers.reference.match import quantity_found

ROW_KINDS = frozenset({"pod", "instance", "service", "host", "ip", "symbol", "path", "region"})
MAX_OWN_ROWS = 3
_CLAUSE = re.compile(r"[;,]|\b(?:while|whereas|but|versus|vs\.?|compared (?:to|with)|against|and the other)\b", re.I)
_PRESENT = re.compile(r"(?i)\b(?:still|now|currently|right now|at the moment|at present|latest|as of now)\b")
_ONSET = re.compile(
    r"(?i)\b(?:began|begins|started|starts|start|since|onset|rose|jumped|spiked|climbed|grew|growing)\b"
)


def clauses(text: str) -> list[tuple[int, int]]:
    """Spans of the claim's clauses, so a number is paired only with the entity it is said of."""
    cuts = [0, *(m.start() for m in _CLAUSE.finditer(text)), len(text)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _comparable(q: Quantity, other: Quantity) -> bool:
    """Same kind of figure within a factor of ten: what the claim's number would be on that row."""
    if q.unit in ("one", "word", "hms") or q.dimension == "duration":
        return False
    for dim, base in q.readings:
        for odim, value in other.readings:
            if odim == dim and value and 0.1 <= base / value <= 10:
                return True
            if not other.unit and other.number and 0.1 <= q.number / other.number <= 10:
                return True
    return False


def _swappable(e: Mention, o: Mention) -> bool:
    """`o` names another thing of the same kind as `e` (another pod, another service with the same role)."""
    if o.kind != e.kind or e.value in o.value or o.value in e.value:
        return False
    if e.kind == "service":
        a, b = e.value.split("-"), o.value.split("-")
        return a[-1] == b[-1] and len(a) == len(b)
    return True


def _own_rows(e: Mention, lines: Sequence[tuple[str, Features]]) -> list[tuple[str, Features]]:
    return [(line, f) for line, f in lines if e.value in line]


def row_conflict(text: str, claim: Features, views: Sequence[EntryView], tentative: bool) -> str | None:
    """A number on another entity's row, or an entity whose own row shows a different number."""
    for lo, hi in clauses(text):
        entities = [m for m in claim.mentions if m.kind in ROW_KINDS and lo <= m.start < hi]
        numbers = [q for q in claim.quantities if lo <= q.start < hi]
        if not entities or not numbers:
            continue
        for view in views:
            here = [e for e in entities if _own_rows(e, view.lines)]
            if len(here) != 1:
                continue
            e = here[0]
            own = _own_rows(e, view.lines)
            if len(own) > MAX_OWN_ROWS:
                continue
            for q in numbers:
                if any(quantity_found(q, x) for _, f in own for x in f.quantities):
                    continue
                holders = [f for _, f in view.lines if any(quantity_found(q, x) for x in f.quantities)]
                for f in holders:
                    other = next((o for o in f.mentions if _swappable(e, o)), None)
                    if other is not None:
                        ref = view.entry.trace_ref
                        return f"claim puts {q.raw} on {e.value}; {ref} shows it on the row of {other.value}"
                if not holders and not tentative:
                    shown = [x.raw for _, f in own for x in f.quantities if _comparable(q, x)]
                    if shown:
                        return f"{view.entry.trace_ref}'s row for {e.value} shows {', '.join(shown[:3])}, not {q.raw}"
    return None


_FLAG = re.compile(
    r"^[\s+>-]*\"?([A-Za-z][\w .-]*?)\"?\s*[:=]\s*\"?(true|false|yes|no|enabled|disabled|on|off)\"?\s*$", re.I
)
_ON = frozenset({"true", "yes", "enabled", "on"})
_STATE_WORDS = {"enabled": True, "enable": True, "on": True, "true": True, "disabled": False, "disable": False,
                "off": False, "false": False}  # fmt: skip
_STATE = re.compile(r"(?i)\b(enabled?|disabled?|turned (?:on|off)|switched (?:on|off)|true|false)\b")


def flags(view: EntryView) -> dict[str, bool]:
    """`Suspend: True`, `FEATURE_X: "false"`: boolean settings, the last value (a diff's `+` line) winning."""
    out: dict[str, bool] = {}
    for line in view.text.split("\n"):
        m = _FLAG.match(line)
        if m and not line.lstrip().startswith("-"):
            out[squash_key(m.group(1))] = m.group(2).lower() in _ON
    return out


def squash_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def flag_conflict(text: str, claim: Features, negated: set[str], views: Sequence[EntryView]) -> str | None:
    """A setting the claim says is on, off, or (not) in a state, where the tool output shows the opposite."""
    for view in views:
        table = flags(view)
        if not table:
            continue
        for key, value in table.items():
            named = [m for m in claim.mentions if squash_key(m.value) == key]
            state = _STATE.search(text)
            if named and state:
                word = state.group(1).lower().split()[-1]
                said = _STATE_WORDS.get(word, word == "on")
                if said != value:
                    return f"claim says {named[0].value} is {state.group(1)}; {view.entry.trace_ref} shows it {value}"
            stems = {s for s in negated if key.startswith(s) and len(s) >= 4}
            if stems and value:
                return f"claim says not {sorted(stems)[0]}; {view.entry.trace_ref} shows {key} true"
    return None


def series(view: EntryView) -> list[tuple[int, str, Quantity]]:
    """(minute, time as written, value) for lines that hold exactly one time and one number: a metric series."""
    points = []
    for _, f in view.lines:
        if len(f.times) == 1 and len(f.quantities) == 1:
            t = f.times[0]
            points.append((t.absolute if t.absolute is not None else t.minute, t.raw, f.quantities[0]))
    return points


def change_point(points: Sequence[tuple[int, str, Quantity]]) -> int | None:
    """Index of the first point that departs threefold from the median of the points before it."""
    for i in range(2, len(points)):
        before = median(p[2].value for p in points[:i])
        value = points[i][2].value
        if before > 0 and (value >= 3 * before or value <= before / 3):
            return i
    return None


def series_conflict(text: str, claim: Features, views: Sequence[EntryView]) -> str | None:
    """An old value called current, or an onset time where the series is still flat."""
    for view in views:
        points = series(view)
        if len(points) < 4:
            continue
        ref = view.entry.trace_ref
        if _PRESENT.search(text) and not claim.times:
            last = points[-1]
            for q in claim.quantities:
                if any(quantity_found(q, p[2]) for p in points[:-1]) and not quantity_found(q, last[2]):
                    return (
                        f"claim gives {q.raw} as the current value; {ref}'s latest point is {last[2].raw} at {last[1]}"
                    )
        i = change_point(points)
        if i is None or not _ONSET.search(text):
            continue
        baseline = median(p[2].value for p in points[:i])
        if not baseline or not (points[i][2].value >= 5 * baseline or points[i][2].value <= baseline / 5):
            continue
        day = 1440 if points[0][0] >= 1440 else 10**9
        flat = [p for p in points[:i] if abs(p[2].value - baseline) <= 0.3 * baseline]
        for t in claim.times:
            at = [p for p in flat if p[0] % day == t.minute]
            if at and sum(1 for p in flat if p[0] > at[0][0]) >= 2:
                return f"claim puts the change at {t.raw}; {ref} is still flat then and departs only at {points[i][1]}"
    return None
