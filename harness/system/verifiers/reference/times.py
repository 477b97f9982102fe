"""Clock times and dates: HH:MM[:SS] with zone and wording, ISO and epoch stamps, month-name dates.

Times become minutes since midnight UTC (and absolute minutes when a date is
attached, so spans across days can be computed); dates become `date` mentions
(`07-14`) that can be swapped like any identifier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from harness.system.verifiers.reference.mentions import Mention
from harness.system.verifiers.reference.quantities import Quantity


@dataclass(frozen=True, slots=True)
class ClockTime:
    """A time of day (minutes since midnight), absolute minutes when a date is attached, and its wording."""

    minute: int
    raw: str
    relation: str = "at"
    absolute: int | None = None
    start: int = 0


# --- dates and times -----------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_ISO_DT = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}|\s?UTC)?)?"
)
_DAY_MON = re.compile(rf"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MON})(?:,?\s+(\d{{4}}))?\b")
_MON_DAY = re.compile(
    rf"(?i)\b({_MON})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?:\d{{2}}:\d{{2}}:\d{{2}}\s+)?(\d{{4}}))?"
)
_EPOCH = re.compile(
    r"(?:(?<=[\[,(@=:\"])|(?<=\(integer\) )|(?<=[\[,(@=:]\s))(1[4-9]\d{8})(?:\.\d+)?(?![\d])(?!\s*[A-Za-z])"
)
_TIME = re.compile(
    r"(?<![\d:.])([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d+)?)?"
    r"(?:\s?(?:Z|UTC|GMT)\b|\s?(?P<tz>CEST|CET|BST|EEST|EET|IST|JST|PST|PDT|EST|EDT|CST|CDT|MST|MDT)\b)?(?![\d])"
)
# offsets from UTC in minutes, for times written in a named zone
_ZONES = {
    "CEST": 120,
    "CET": 60,
    "BST": 60,
    "EEST": 180,
    "EET": 120,
    "IST": 330,
    "JST": 540,
    "PST": -480,
    "PDT": -420,
    "EST": -300,
    "EDT": -240,
    "CST": -360,
    "CDT": -300,
    "MST": -420,
    "MDT": -360,
}
_TIME_RELATION = (
    (
        "since",
        re.compile(r"(?i)\b(?:since|from|starting(?: at)?|started(?: at)?|began(?: at)?|onset(?: at)?|after)\W*$"),
    ),
    ("until", re.compile(r"(?i)\b(?:until|till|before|by|ending(?: at)?|ended(?: at)?|to)\W*$")),
    ("approx", re.compile(r"(?i)(?:\b(?:around|about|approximately|approx\.?|roughly|circa|near)|~)\W*$")),
)


def _date_mention(month: int, day: int, start: int, end: int) -> Mention | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return Mention("date", f"{month:02d}-{day:02d}", "date", start, end)


def _absolute(year: int, month: int, day: int, minute: int) -> int | None:
    try:
        return date(year, month, day).toordinal() * 1440 + minute
    except ValueError:
        return None


def _blank(chars: list[str], start: int, end: int) -> None:
    chars[start:end] = " " * (end - start)


def _relation(text: str, start: int) -> str:
    before = text[max(0, start - 24) : start]
    return next((name for name, rx in _TIME_RELATION if rx.search(before)), "at")


def extract_times(text: str) -> tuple[list[ClockTime], list[Mention], list[Quantity], str]:
    """Clock times, dates (as mentions), HH:MM:SS spans read as durations, and the text with all blanked."""
    times: list[ClockTime] = []
    dates: list[Mention] = []
    spans: list[Quantity] = []
    chars = list(text)
    lower = text.lower()
    for m in _ISO_DT.finditer(text) if "-" in text else ():
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        mention = _date_mention(mo, d, m.start(), m.end())
        if mention is None:
            continue
        dates.append(mention)
        if m.group(4) is not None and int(m.group(4)) < 24 and int(m.group(5)) < 60:
            minute = int(m.group(4)) * 60 + int(m.group(5))
            times.append(
                ClockTime(minute, m.group(0), _relation(text, m.start()), _absolute(y, mo, d, minute), m.start())
            )
        _blank(chars, m.start(), m.end())
    masked = "".join(chars)
    months = any(mon in lower for mon in _MONTHS)
    for rx, day_first in ((_DAY_MON, True), (_MON_DAY, False)) if months else ():
        for m in rx.finditer(masked):
            day, mon = (m.group(1), m.group(2)) if day_first else (m.group(2), m.group(1))
            mention = _date_mention(_MONTHS.get(mon[:3].lower(), 0), int(day), m.start(), m.end())
            if mention is not None:
                dates.append(mention)
                _blank(chars, m.start(), m.end(2))
                if m.group(3) is not None:
                    _blank(chars, m.start(3), m.end(3))
        masked = "".join(chars)
    for m in _EPOCH.finditer(masked):
        seconds = int(m.group(1))
        times.append(ClockTime(seconds % 86400 // 60, m.group(0), "at", seconds // 60 + 719163 * 1440, m.start()))
        _blank(chars, m.start(), m.end())
    masked = "".join(chars)
    for m in _TIME.finditer(masked) if ":" in masked else ():
        hours, minutes = int(m.group(1)), int(m.group(2))
        utc = (hours * 60 + minutes - _ZONES.get(m.group("tz") or "", 0)) % 1440
        times.append(ClockTime(utc, m.group(0).strip(), _relation(masked, m.start()), None, m.start()))
        if hours == 0 and m.group(3) is not None:  # 00:14:31 is an elapsed time more often than a clock time
            elapsed = float(minutes * 60 + int(m.group(3)))
            spans.append(Quantity((("duration", elapsed),), elapsed, m.group(0).strip(), start=m.start(), unit="hms"))
        _blank(chars, m.start(), m.end())
    return times, dates, spans, "".join(chars)
