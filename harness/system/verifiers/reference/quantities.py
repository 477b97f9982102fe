"""Numbers with units, normalised so that differently written values compare.

A quantity keeps every reading of its unit (`500m` is 500 minutes or half a
core; `1 GB` is 10^9 or 2^30 bytes) and the number as written, because tool
output often gives bare numbers whose unit sits in a header (`(seconds)`,
`value (MiB)`) or is the metric's base unit (Prometheus: seconds, bytes, ratios).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from harness.system.verifiers.reference.text import STOPWORDS, stem


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number: its readings as (dimension, value in the base unit), and the number as written."""

    readings: tuple[tuple[str, float], ...]
    number: float
    raw: str
    fixed_label: frozenset[str] | None = None
    written_op: str = ""
    decimals: int = 0
    factor: float = 1.0
    start: int = 0
    unit: str = ""
    left: str = ""
    right: str = ""

    @property
    def label(self) -> frozenset[str]:
        """Stems of the words around the number in its clause: what it measures (computed when asked)."""
        if self.fixed_label is not None:
            return self.fixed_label
        return _label(self.left, self.right if not self.unit or self.unit == "word" else None)

    @property
    def op(self) -> str:
        """`>`, `<`, `~` or `=`: from a written sign or the words before the number (`over`, `about`)."""
        return _op(self.left[-20:], self.written_op)

    @property
    def dimension(self) -> str:
        return self.readings[0][0]

    @property
    def value(self) -> float:
        return self.readings[0][1]

    @property
    def step(self) -> float:
        """The rounding step of the written number, in the base unit (12.4% → 0.1)."""
        return 10.0**-self.decimals * self.factor


# --- quantities ----------------------------------------------------------------------

_B = 1024.0
# unit -> readings as (dimension, factor to the base unit)
_UNITS: dict[str, tuple[tuple[str, float], ...]] = {
    "%": (("percent", 1),),
    "percent": (("percent", 1),),
    "pct": (("percent", 1),),
    "ns": (("duration", 1e-9),),
    "µs": (("duration", 1e-6),),
    "μs": (("duration", 1e-6),),
    "us": (("duration", 1e-6),),
    "ms": (("duration", 1e-3),),
    "msec": (("duration", 1e-3),),
    "millisecond": (("duration", 1e-3),),
    "s": (("duration", 1),),
    "sec": (("duration", 1),),
    "second": (("duration", 1),),
    "m": (("duration", 60), ("cpu", 1e-3)),
    "min": (("duration", 60),),
    "minute": (("duration", 60),),
    "h": (("duration", 3600),),
    "hr": (("duration", 3600),),
    "hour": (("duration", 3600),),
    "d": (("duration", 86400),),
    "day": (("duration", 86400),),
    "week": (("duration", 604800),),
    "b": (("bytes", 1),),
    "byte": (("bytes", 1),),
    "kb": (("bytes", 1e3), ("bytes", _B)),
    "kib": (("bytes", _B),),
    "ki": (("bytes", _B),),
    "mb": (("bytes", 1e6), ("bytes", _B**2)),
    "mib": (("bytes", _B**2),),
    "mi": (("bytes", _B**2),),
    "gb": (("bytes", 1e9), ("bytes", _B**3)),
    "gib": (("bytes", _B**3),),
    "gi": (("bytes", _B**3),),
    "tb": (("bytes", 1e12), ("bytes", _B**4)),
    "tib": (("bytes", _B**4),),
    "ti": (("bytes", _B**4),),
    "req/s": (("rate", 1),),
    "requests/s": (("rate", 1),),
    "rps": (("rate", 1),),
    "qps": (("rate", 1),),
    "ops/s": (("rate", 1),),
    "msg/s": (("rate", 1),),
    "/s": (("rate", 1),),
    "per second": (("rate", 1),),
    "requests per second": (("rate", 1),),
    "/min": (("rate", 1 / 60),),
    "per minute": (("rate", 1 / 60),),
    "rpm": (("rate", 1 / 60),),
    "x": (("factor", 1),),
    "×": (("factor", 1),),
    "core": (("cpu", 1),),
    "cpu core": (("cpu", 1),),
    "vcpu": (("cpu", 1),),
    "millicore": (("cpu", 1e-3),),
}
# df -h style single letters: case-sensitive, and `M` may also be a million (`2.3M` messages)
_SIZE_LETTERS: dict[str, tuple[tuple[str, float], ...]] = {
    "K": (("bytes", _B), ("count", 1e3)),
    "M": (("count", 1e6), ("bytes", _B**2)),
    "G": (("bytes", _B**3), ("count", 1e9)),
    "T": (("bytes", _B**4),),
}
_UNIT_ALTS = sorted({*_UNITS, *(u + "s" for u in _UNITS if u[-1].isalpha() and len(u) > 2)}, key=len, reverse=True)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<op>(?:~|≈|>=|<=|>|<)\s*)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<k>(?-i:k)(?![A-Za-z]))?"
    r"(?:(?P<size>(?-i:[KMGT]))(?![A-Za-z0-9])|[\s-]?(?P<unit>" + "|".join(re.escape(u) for u in _UNIT_ALTS) + r")"
    r"(?![A-Za-z0-9]))?"
    r"(?![\w.]\d|[A-Za-z])",
    re.IGNORECASE,
)
_ONE_UNIT = re.compile(r"(?i)\b(?:an?|one|the next|the last|the past|per)\s+(second|minute|hour|day|week)\b")
_JVM = re.compile(r"-Xm[xsn](\d+)([kKmMgG])\b")
_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORD = re.compile(r"(?i)\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b")
_OP_WORDS = (
    (">", re.compile(r"(?i)\b(?:over|more than|above|exceed(?:s|ed|ing)?|greater than|at least|upwards of)\s*$")),
    ("<", re.compile(r"(?i)\b(?:under|less than|below|fewer than|at most|up to)\s*$")),
    ("~", re.compile(r"(?i)\b(?:about|around|approximately|approx\.?|roughly|nearly|almost|close to|some|~)\s*$")),
)
_NUMBER_WORDS_SET = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_OP_NEEDLES = (
    "over",
    "more",
    "above",
    "exceed",
    "greater",
    "least",
    "upward",
    "under",
    "less",
    "below",
    "fewer",
    "most",
    "up to",
    "about",
    "around",
    "approx",
    "roughly",
    "nearly",
    "almost",
    "close",
    "some",
    "~",
)
_LABEL_STOP = STOPWORDS | {"value", "val", "count", "total", "number", "current", "avg", "mean", "its", "not", "no"}
_CLAUSE_BREAK = re.compile(r"[\n;{}\[\]|]|[.,](?!\d)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_LABEL_WORDS = {
    "err": "error",
    "errs": "error",
    "errors": "error",
    "conn": "connection",
    "conns": "connection",
    "db": "database",
    "timed": "timeout",
    "median": "p50",
}


def _unit_key(unit: str) -> str:
    low = unit.lower()
    if low in _UNITS:
        return low
    return low[:-1] if low.endswith("s") and low[:-1] in _UNITS else low


@lru_cache(maxsize=8192)
def _label(left: str, right: str | None) -> frozenset[str]:
    cut = max((m.end() for m in _CLAUSE_BREAK.finditer(left)), default=0)
    words = [w for w in _WORD.findall(left[cut:]) if w.lower() not in _LABEL_STOP][-4:]
    if right is not None:
        stop = _CLAUSE_BREAK.search(right)
        after = _WORD.findall(right[: stop.start()] if stop else right)
        words += [w for w in after if w.lower() not in _LABEL_STOP][:2]
    parts: set[str] = set()
    for w in words:
        parts.add(_LABEL_WORDS.get(w.lower(), stem(w)))
        if not w.islower():
            parts.update(stem(p) for p in _CAMEL_PART.findall(w) if len(p) > 1)
    return frozenset(parts)


@lru_cache(maxsize=8192)
def _op(before: str, written: str) -> str:
    op = written.strip()
    if not op and any(n in before.lower() for n in _OP_NEEDLES):
        op = next((sym for sym, rx in _OP_WORDS if rx.search(before)), "=")
    return {"≈": "~", ">=": ">", "<=": "<", "": "="}.get(op, op)


def _around(text: str, start: int, end: int) -> tuple[str, str]:
    """The text just before and after a number: where its label and comparison word are read from."""
    return text[max(0, start - 48) : start], text[end : end + 32]


_RANGE_JOIN = re.compile(r"\s*(?:-|–|to|and)\s*")


def _ranges(text: str, numbers: Sequence[tuple[re.Match[str], Quantity]]) -> list[Quantity]:
    """`300-330k`, `49-52 minutes`, `1.2 and 3.8 ms`: the first number takes the unit written after the second."""
    out = [q for _, q in numbers]
    for i in range(len(numbers) - 1):
        (m, q), (m_next, nxt) = numbers[i], numbers[i + 1]
        if q.unit or m.group("k") or not nxt.number or not _RANGE_JOIN.fullmatch(text[m.end() : m_next.start()]):
            continue
        if not (nxt.unit or m_next.group("k")):
            continue
        number = q.number * (1000 if m_next.group("k") else 1)
        readings = tuple((dim, number * value / nxt.number) for dim, value in nxt.readings)
        out[i] = replace(q, readings=readings, number=number, unit=nxt.unit, factor=nxt.factor)
    return out


def extract_quantities(text: str) -> list[Quantity]:
    """Numbers with units, normalised; run on text whose identifiers, dates and times are blanked."""
    out: list[Quantity] = []
    for m in _JVM.finditer(text) if "-X" in text else ():
        n = float(m.group(1))
        factor = {"k": _B, "m": _B**2, "g": _B**3}[m.group(2).lower()]
        out.append(
            Quantity(
                (("bytes", n * factor),),
                n,
                m.group(0),
                frozenset({"heap", "memory"}),
                factor=factor,
                start=m.start(),
                unit="jvm",
            )
        )
    numbers: list[tuple[re.Match[str], Quantity]] = []
    for m in _NUMBER.finditer(text):
        num = m.group("num").replace(",", "")
        number = float(num) * (1000 if m.group("k") else 1)
        unit = m.group("unit")
        if m.group("size"):
            readings = _SIZE_LETTERS[m.group("size")]
        else:
            readings = _UNITS[_unit_key(unit)] if unit else (("count", 1.0),)
        unit = unit or m.group("size")
        numbers.append(
            (
                m,
                Quantity(
                    readings=tuple((dim, number * f) for dim, f in readings),
                    number=number,
                    raw=m.group(0).strip(),
                    written_op=m.group("op") or "",
                    decimals=len(num.split(".")[1]) if "." in num else 0,
                    factor=readings[0][1],
                    unit=unit or "",
                    start=m.start(),
                    left=text[max(0, m.start() - 48) : m.start()],
                    right=text[m.end() : m.end() + 32],
                ),
            )
        )
    out.extend(_ranges(text, numbers))
    lower = text.lower()
    if any(n in lower for n in ("second", "minute", "hour", "day", "week")):
        for m in _ONE_UNIT.finditer(text):
            seconds = _UNITS[m.group(1).lower()][0][1]
            left, right = _around(text, m.start(), m.end())
            out.append(
                Quantity(
                    (("duration", seconds),),
                    1.0,
                    m.group(0),
                    factor=seconds,
                    unit="one",
                    start=m.start(),
                    left=left,
                    right=right,
                )
            )
    if any(w in lower for w in _NUMBER_WORDS_SET):
        for m in _NUMBER_WORD.finditer(text):
            n = float(_WORDS[m.group(1).lower()])
            left, right = _around(text, m.start(), m.end())
            out.append(Quantity((("count", n),), n, m.group(0), unit="word", start=m.start(), left=left, right=right))
    return out
