"""Pure extractors: identifiers and error codes, quantities with units, clock times.

Each returns small frozen records with their character spans, so a caller can
mask what one extractor found before the next runs (a pod name's digits are not
a number; `10:02` is a time, not two counts). `features` runs them in that order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.system.verifiers.reference.text import STOPWORDS, fold_phrases, stem


@dataclass(frozen=True, slots=True)
class Mention:
    """An identifier or error code: `kind` decides which others are alternatives for the same slot."""

    kind: str
    value: str
    family: str
    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with its unit, normalised to a base unit (seconds, bytes, per second, percent)."""

    value: float
    dimension: str
    raw: str
    label: frozenset[str] = frozenset()
    op: str = "="
    decimals: int = 0
    alt_value: float | None = None
    start: int = 0
    number: float = 0.0
    factor: float = 1.0

    @property
    def step(self) -> float:
        """The rounding step of the written number, in the base unit (12.4% → 0.1)."""
        return 10.0**-self.decimals * self.factor


@dataclass(frozen=True, slots=True)
class ClockTime:
    """A time of day in minutes since midnight, with what the words around it say about it."""

    minute: int
    raw: str
    relation: str = "at"
    start: int = 0


@dataclass(frozen=True, slots=True)
class Features:
    mentions: tuple[Mention, ...] = ()
    quantities: tuple[Quantity, ...] = ()
    times: tuple[ClockTime, ...] = ()
    masked: str = field(default="", repr=False)


# --- identifiers and codes -----------------------------------------------------------

_K8S_REASONS = (
    "OOMKilled|CrashLoopBackOff|ImagePullBackOff|ErrImagePull|Evicted|FailedScheduling|FailedMount|NodeNotReady|"
    "ContainerCannotRun|CreateContainerConfigError|DeadlineExceeded|Preempted|FailedCreatePodSandBox"
)
_ERRNO = (
    "ECONNREFUSED|ECONNRESET|ECONNABORTED|ETIMEDOUT|ENOSPC|EACCES|ENOENT|EPIPE|EHOSTUNREACH|ENETUNREACH|"
    "EADDRINUSE|EMFILE|ENFILE|ENOMEM|EAI_AGAIN|NXDOMAIN|SERVFAIL"
)
_HTTP_TEXT = (
    "Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|Not Found|Too Many Requests|"
    "Unauthorized|Forbidden|Bad Request|Conflict|Request Timeout|Payload Too Large"
)
_REGION_DIR = "east|west|north|south|central|northeast|northwest|southeast|southwest"

# (kind, family, pattern, group holding the value); applied in order, earlier spans mask later ones.
_MENTION_PATTERNS: tuple[tuple[str, str, re.Pattern[str], int], ...] = tuple(
    (kind, family, re.compile(pattern), group)
    for kind, family, pattern, group in (
        ("code", "ora", r"\bORA-\d{5}\b", 0),
        ("code", "sqlstate", r"(?i)\bSQLSTATE\b[\s:=\[\"'(]*([0-9A-Z]{5})\b", 1),
        ("code", "exit", r"(?i)\bexit(?:ed)?[ _]?(?:with[ _])?(?:code|status)?[\"']?\s*[:=]?\s*(\d{1,3})\b", 1),
        ("code", "signal", r"\bSIG(?:KILL|TERM|SEGV|ABRT|INT|HUP|QUIT|BUS|PIPE)\b", 0),
        ("code", "mysql", r"\bERROR\s+([12]\d{3})\b", 1),
        ("code", "errcode", r"(?i)\berror[ _]?code[\"']?\s*[:=]?\s*[\"']?(\d{3,5})\b", 1),
        ("code", "errno", rf"\b(?:{_ERRNO})\b", 0),
        ("code", "k8s", rf"\b(?:{_K8S_REASONS})\b", 0),
        ("code", "http", r"(?i)\bHTTP(?:/\d(?:\.\d)?)?\s*[:=]?\s*([1-5]\d\d)\b", 1),
        (
            "code",
            "http",
            r"(?i)\b(?:status(?:[ _]?code)?|statusCode|code|returned|returning|returns|responded|errors?)"
            r"[\"']?\s*[:=]?\s*[\"']?([1-5]\d\d)\b(?!\s*(?:ms|s|%|req))",
            1,
        ),
        ("code", "http", rf"\b([1-5]\d\d)\s+(?:{_HTTP_TEXT})\b", 1),
        ("code", "http", r"\b([45]\d\d)s\b", 1),
        ("code", "http_class", r"(?i)\b([1-5]xx)\b", 1),
        ("exception", "exception", r"\b(?:[a-z_][a-z0-9_]*\.)*([A-Z][A-Za-z0-9]+?(?:Exception|Error))\b", 1),
        ("ip", "ip", r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{2,5})?(?![\d.])", 0),
        (
            "host",
            "host",
            r"(?i)\b[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
            r"\.(?:com|net|org|io|internal|local|svc|dev|cloud|corp|lan|example)\b",
            0,
        ),
        ("region", "region", rf"\b(?:us|eu|ap|sa|ca|me|af|il|mx|cn)-(?:gov-)?(?:{_REGION_DIR})-\d[a-f]?\b", 0),
        ("region", "region", rf"\b(?:us|europe|asia|australia|northamerica|southamerica)-(?:{_REGION_DIR})\d\b", 0),
        ("version", "version", r"\bv\d+(?:\.\d+){1,3}(?:-[a-z0-9.]+)?\b|(?<=:)\d+\.\d+\.\d+\b", 0),
        ("pod", "pod", r"\b[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-(?=[a-z]*\d)[a-z0-9]{4,10}-[a-z0-9]{5}\b", 0),
        ("instance", "instance", r"\bi-[0-9a-f]{8,17}\b|\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d{1,3}[a-z]?\b", 0),
        ("service", "service", r"\b[a-z][a-z0-9]*(?:[-_][a-z][a-z0-9]*)*-[a-z][a-z0-9]*\b", 0),
    )
)

# Cheap substring pre-checks: a pattern runs only when one of its needles is in the lower-cased text.
_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("ora-",),
    ("sqlstate",),
    ("exit",),
    ("sig",),
    ("error",),
    ("error",),
    (),
    (),
    ("http",),
    ("status", "code", "return", "respond", "error"),
    (),
    ("0s", "1s", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s"),
    ("xx",),
    ("exception", "error"),
    (".",),
    (".",),
    ("-",),
    ("-",),
    ("v", ":"),
    ("-",),
    ("-",),
    ("-",),
)

_HYPHEN_PREFIXES = frozenset(
    "non re pre post multi self co anti sub over under cross in out well half all semi de un high low long short "
    "single double third end read write real so x e".split()
)
_HYPHEN_TAILS = frozenset(
    "wide based related level side only like free time term hand bound aware safe driven specific up down out off "
    "in on over alive limited limit running lived known threaded scale scaling run stop start call date".split()
)


def _service_like(token: str) -> bool:
    """Hyphenated words that are English (read-only, cluster-wide), not component names, are dropped."""
    parts = token.split("-")
    return parts[0] not in _HYPHEN_PREFIXES and parts[-1] not in _HYPHEN_TAILS


def _family(kind: str, family: str, value: str) -> str:
    if kind == "pod":
        return value.rsplit("-", 2)[0]
    if kind == "instance":
        return value.rsplit("-", 1)[0]
    return family


def extract_mentions(text: str) -> tuple[list[Mention], str]:
    """Identifiers and error codes, and the text with their spans blanked out."""
    found: list[Mention] = []
    chars = list(text)
    masked = text
    lower = text.lower()
    for (kind, family, pattern, group), needles in zip(_MENTION_PATTERNS, _NEEDLES, strict=True):
        if needles and not any(n in lower for n in needles):
            continue
        hit = False
        for m in pattern.finditer(masked):
            value = m.group(group)
            if kind == "service" and not _service_like(value):
                continue
            norm = value.upper() if family in ("ora", "sqlstate") else value.lower()
            if family == "exit":
                norm = f"exit {norm}"
            found.append(Mention(kind, norm, _family(kind, family, norm), m.start(), m.end()))
            chars[m.start() : m.end()] = " " * (m.end() - m.start())
            hit = True
        if hit:
            masked = "".join(chars)
    return found, masked


# --- clock times ---------------------------------------------------------------------

_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?=[T\s]|\b)")
_TIME = re.compile(r"(?<![\d:.])([01]?\d|2[0-3]):([0-5]\d)(?::[0-5]\d(?:\.\d+)?)?(?:\s?(?:Z|UTC)\b)?(?![\d])")
_TIME_RELATION = (
    (
        "since",
        re.compile(r"(?i)\b(?:since|from|starting(?: at)?|started(?: at)?|began(?: at)?|onset(?: at)?|after)\W*$"),
    ),
    ("until", re.compile(r"(?i)\b(?:until|till|before|by|ending(?: at)?|ended(?: at)?)\W*$")),
    ("approx", re.compile(r"(?i)(?:\b(?:around|about|approximately|approx\.?|roughly|circa|near)|~)\W*$")),
)


def extract_times(text: str) -> tuple[list[ClockTime], str]:
    """Clock times (HH:MM, HH:MM:SS, ISO timestamps), and the text with times and dates blanked."""
    masked = _DATE.sub(lambda m: " " * len(m.group(0)), text)
    out: list[ClockTime] = []
    for m in _TIME.finditer(masked):
        before = masked[max(0, m.start() - 24) : m.start()]
        relation = next((name for name, rx in _TIME_RELATION if rx.search(before)), "at")
        out.append(ClockTime(int(m.group(1)) * 60 + int(m.group(2)), m.group(0).strip(), relation, m.start()))
    masked = _TIME.sub(lambda m: " " * len(m.group(0)), masked)
    return out, masked


# --- quantities ----------------------------------------------------------------------

_B = 1024.0
# unit -> (dimension, factor to base, alternative factor or None)
_UNITS: dict[str, tuple[str, float, float | None]] = {
    "%": ("percent", 1, None),
    "percent": ("percent", 1, None),
    "pct": ("percent", 1, None),
    "ns": ("duration", 1e-9, None),
    "µs": ("duration", 1e-6, None),
    "μs": ("duration", 1e-6, None),
    "us": ("duration", 1e-6, None),
    "ms": ("duration", 1e-3, None),
    "msec": ("duration", 1e-3, None),
    "millisecond": ("duration", 1e-3, None),
    "s": ("duration", 1, None),
    "sec": ("duration", 1, None),
    "second": ("duration", 1, None),
    "m": ("duration", 60, None),
    "min": ("duration", 60, None),
    "minute": ("duration", 60, None),
    "h": ("duration", 3600, None),
    "hr": ("duration", 3600, None),
    "hour": ("duration", 3600, None),
    "d": ("duration", 86400, None),
    "day": ("duration", 86400, None),
    "b": ("bytes", 1, None),
    "byte": ("bytes", 1, None),
    "kb": ("bytes", 1e3, _B),
    "kib": ("bytes", _B, None),
    "ki": ("bytes", _B, None),
    "mb": ("bytes", 1e6, _B**2),
    "mib": ("bytes", _B**2, None),
    "mi": ("bytes", _B**2, None),
    "gb": ("bytes", 1e9, _B**3),
    "gib": ("bytes", _B**3, None),
    "gi": ("bytes", _B**3, None),
    "tb": ("bytes", 1e12, _B**4),
    "tib": ("bytes", _B**4, None),
    "ti": ("bytes", _B**4, None),
    "req/s": ("rate", 1, None),
    "requests/s": ("rate", 1, None),
    "rps": ("rate", 1, None),
    "qps": ("rate", 1, None),
    "ops/s": ("rate", 1, None),
    "msg/s": ("rate", 1, None),
    "/s": ("rate", 1, None),
    "per second": ("rate", 1, None),
    "requests per second": ("rate", 1, None),
    "/min": ("rate", 1 / 60, None),
    "per minute": ("rate", 1 / 60, None),
    "rpm": ("rate", 1 / 60, None),
    "x": ("factor", 1, None),
    "×": ("factor", 1, None),
    "core": ("cpu", 1, None),
    "vcpu": ("cpu", 1, None),
    "millicore": ("cpu", 1e-3, None),
}
_UNIT_ALTS = sorted(
    {u for u in _UNITS} | {u + "s" for u in _UNITS if u[-1].isalpha() and len(u) > 2},
    key=len,
    reverse=True,
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<op>(?:~|≈|>=|<=|>|<)\s*)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<k>[kK](?![A-Za-z]))?"
    r"(?:\s?(?P<unit>" + "|".join(re.escape(u) for u in _UNIT_ALTS) + r")(?![A-Za-z0-9]))?"
    r"(?![\w.]\d|[A-Za-z])",
    re.IGNORECASE,
)
_OP_WORDS = (
    (">", re.compile(r"(?i)\b(?:over|more than|above|exceed(?:s|ed|ing)?|greater than|at least|upwards of)\s*$")),
    ("<", re.compile(r"(?i)\b(?:under|less than|below|fewer than|at most|up to)\s*$")),
    ("~", re.compile(r"(?i)\b(?:about|around|approximately|approx\.?|roughly|nearly|almost|close to|some)\s*$")),
)
_LABEL_STOP = STOPWORDS | {"value", "val", "count", "total", "number", "current", "now", "avg", "mean", "of", "its"}
_CLAUSE_BREAK = re.compile(r"[\n;{}\[\]|]|[.,](?!\d)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_LABEL_WORDS = {w: fold_phrases(w).lower() for w in ("err", "errs", "errors", "conn", "conns", "db", "oom", "median")}
_LABEL_WORDS["timed"] = "timeout"


def _unit_key(unit: str) -> str:
    low = unit.lower()
    if low in _UNITS:
        return low
    return low[:-1] if low.endswith("s") and low[:-1] in _UNITS else low


def _label(text: str, start: int, end: int, counted: bool) -> frozenset[str]:
    """Stems of the words around a number in the same clause: what the number measures."""
    left = text[max(0, start - 48) : start]
    cut = max((m.end() for m in _CLAUSE_BREAK.finditer(left)), default=0)
    words = [w for w in _WORD.findall(left[cut:]) if w.lower() not in _LABEL_STOP][-4:]
    if counted:
        right = text[end : end + 32]
        stop = _CLAUSE_BREAK.search(right)
        words += [w for w in _WORD.findall(right[: stop.start()] if stop else right) if w.lower() not in _LABEL_STOP][
            :2
        ]
    parts: set[str] = set()
    for w in words:
        parts.add(_LABEL_WORDS.get(w.lower(), stem(w)))
        if not w.islower():
            parts.update(stem(p) for p in _CAMEL_PART.findall(w) if len(p) > 1)
    return frozenset(parts)


def extract_quantities(text: str) -> list[Quantity]:
    """Numbers with units, normalised; run on text whose identifiers and times are blanked."""
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        num = m.group("num").replace(",", "")
        value = float(num) * (1000 if m.group("k") else 1)
        decimals = len(num.split(".")[1]) if "." in num else 0
        unit = m.group("unit")
        dimension, factor, alt = _UNITS[_unit_key(unit)] if unit else ("count", 1.0, None)
        op = (m.group("op") or "").strip()
        if not op:
            before = text[max(0, m.start() - 20) : m.start()]
            op = next((sym for sym, rx in _OP_WORDS if rx.search(before)), "=")
        op = {"≈": "~", ">=": ">", "<=": "<"}.get(op, op)
        out.append(
            Quantity(
                value=value * factor,
                dimension=dimension,
                raw=m.group(0).strip(),
                label=_label(text, m.start(), m.end(), counted=dimension == "count"),
                op=op,
                decimals=decimals,
                alt_value=value * alt if alt else None,
                start=m.start(),
                number=value,
                factor=factor,
            )
        )
    return out


def features(text: str) -> Features:
    """Mentions first, then times, then quantities from what is left."""
    mentions, masked = extract_mentions(text)
    times, masked = extract_times(masked)
    return Features(tuple(mentions), tuple(extract_quantities(masked)), tuple(times), masked)
