"""Identifiers and error codes: services, pods, instances, hosts, IPs, regions, versions, codes, symbols.

Patterns run in order and each blanks what it found, so a pod name is not also
read as a service, nor an exit code as an HTTP status. `kind` and `family`
decide which other mention is an alternative value for the same slot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Mention:
    """An identifier or error code found in a text."""

    kind: str
    value: str
    family: str
    start: int = 0
    end: int = 0


_K8S_REASONS = (
    "OOMKilled|OOMKilling|CrashLoopBackOff|ImagePullBackOff|ErrImagePull|Evicted|FailedScheduling|FailedMount|"
    "NodeNotReady|ContainerCannotRun|CreateContainerConfigError|DeadlineExceeded|Preempted|FailedCreatePodSandBox|"
    "ProgressDeadlineExceeded|Unhealthy|BackOff"
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
_DIGIT_S = tuple(f"{d}s" for d in range(10))

# (kind, family, pattern, value group, needles): a pattern runs only if a needle is in the lower-cased text.
_PATTERNS: tuple[tuple[str, str, re.Pattern[str], int, tuple[str, ...]], ...] = tuple(
    (kind, family, re.compile(pattern), group, needles)
    for kind, family, pattern, group, needles in (
        ("code", "ora", r"\bORA-\d{5}\b", 0, ("ora-",)),
        ("code", "sqlstate", r"(?i)\bSQLSTATE\b[\s:=\[\"'(]*([0-9A-Z]{5})\b", 1, ("sqlstate",)),
        (
            "code",
            "exit",
            r"(?i)\bexit(?:ed)?[ _]?(?:with[ _])?(?:code|status)?[\"']?\s*[:=]?\s*(\d{1,3})\b",
            1,
            ("exit",),
        ),
        ("code", "signal", r"\bSIG(?:KILL|TERM|SEGV|ABRT|INT|HUP|QUIT|BUS|PIPE)\b", 0, ("sig",)),
        ("code", "mysql", r"\bERROR\s+([12]\d{3})\b", 1, ("error",)),
        ("code", "errcode", r"(?i)\berror[ _]?code[\"']?\s*[:=]?\s*[\"']?(\d{3,5})\b", 1, ("error",)),
        ("code", "errno", rf"\b(?:{_ERRNO})\b", 0, ()),
        ("code", "k8s", rf"\b(?:{_K8S_REASONS})\b", 0, ()),
        ("code", "http", r"(?i)\bHTTP(?:/\d(?:\.\d)?)?\"?\s*[:=]?\s*([1-5]\d\d)\b", 1, ("http",)),
        (
            "code",
            "http",
            r"(?i)\b(?:status(?:[ _]?code)?|statusCode|code|returned|returning|returns|responded|errors?|with)"
            r"[\"']?\s*[:=]?\s*[\"']?([1-5]\d\d)\b(?!\s*(?:ms|s\b|%|req|of|/|\.\d))",
            1,
            ("status", "code", "return", "respond", "error", "with"),
        ),
        ("code", "http", rf"\b([1-5]\d\d)\s+(?:{_HTTP_TEXT}|UF|UT|UH|UO|URX|NR|UC|DC)\b", 1, ()),
        ("code", "http", r"\b([45]\d\d)s\b", 1, _DIGIT_S),
        ("code", "http_class", r"(?i)\b([1-5]xx)\b", 1, ("xx",)),
        (
            "exception",
            "exception",
            r"\b(?:[a-z_][a-z0-9_]*\.)*([A-Z][A-Za-z0-9]+?(?:Exception|Error))\b",
            1,
            ("exception", "error"),
        ),
        ("ip", "ip", r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{2,5})?(?![\d.])", 0, (".",)),
        (
            "host",
            "host",
            r"(?i)\b[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
            r"\.(?:com|net|org|io|internal|local|svc|dev|cloud|corp|lan|example)\b",
            0,
            (".",),
        ),
        ("region", "region", rf"\b(?:us|eu|ap|sa|ca|me|af|il|mx|cn)-(?:gov-)?(?:{_REGION_DIR})-\d[a-f]?\b", 0, ("-",)),
        (
            "region",
            "region",
            rf"\b(?:us|europe|asia|australia|northamerica|southamerica)-(?:{_REGION_DIR})\d\b",
            0,
            ("-",),
        ),
        (
            "version",
            "version",
            r"(?<![\w.])v?\d+\.\d+\.\d+(?:-[a-z0-9]+(?:\.[a-z0-9]+)*)?(?![\w.]\w)|\bv\d+\.\d+\b"
            r"|(?i:(?<=version )|(?<=app )|(?<=release ))\d+\.\d+\b",
            0,
            (".",),
        ),
        ("pod", "pod", r"\b[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-(?=[a-z]*\d)[a-z0-9]{4,10}-[a-z0-9]{5}\b", 0, ("-",)),
        ("port", "port", r"(?i)\bports?\s*[:=]?\s*(\d{1,5})\b|\b(\d{1,5})/(?:tcp|udp)\b", 0, ("port", "tcp", "udp")),
        (
            "instance",
            "instance",
            r"\bi-[0-9a-f]{8,17}\b|\b[a-zA-Z][a-z0-9]*(?:-[a-z0-9]+)*-(?:\d{1,3}[a-z]?|\d{6,})(?:-[a-z0-9]{1,5})?\b",
            0,
            ("-",),
        ),
        ("symbol", "symbol", r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", 0, ("_",)),
        ("symbol", "symbol", r"\b[A-Z][a-z0-9]{2,}(?:[A-Z]+[a-z0-9]*)+\b", 0, ()),
        ("symbol", "symbol", r"\b[a-z][\w-]*(?:\.[a-z][\w-]*)+\b", 0, (".",)),
        ("path", "path", r"(?<![\w.:/])/(?:[\w.@-]+/)*[\w.@-]*", 0, ("/",)),
        ("service", "service", r"\b[a-zA-Z][a-z0-9]*(?:-[a-z][a-z0-9]*)+\b", 0, ("-",)),
    )
)

_HYPHEN_PREFIXES = frozenset(
    "non re pre post multi self co anti sub over under cross in out well half all semi de un high low long short "
    "single double third end read write real so x e up down time per".split()
)
_HYPHEN_TAILS = frozenset(
    "wide based related level side only like free time term hand bound aware safe driven specific up down out off "
    "in on over alive limited limit running lived known threaded scale scaling run stop start call date minute "
    "second hour day week percent cpu period periods sample".split()
)


def _service_like(token: str) -> bool:
    """Hyphenated words that are English (read-only, cluster-wide), not component names, are dropped."""
    parts = token.lower().split("-")
    return parts[0] not in _HYPHEN_PREFIXES and parts[-1] not in _HYPHEN_TAILS


def _family(kind: str, family: str, value: str) -> str:
    if kind == "pod":
        return value.rsplit("-", 2)[0]
    if kind == "instance":
        return value.rsplit("-", 1)[0]
    return family


def _normal(kind: str, family: str, value: str) -> str:
    if family in ("ora", "sqlstate"):
        return value.upper()
    if family == "exit":
        return f"exit {value}"
    if kind == "version":
        return value.lower().lstrip("v")
    if kind == "port":
        return "".join(ch for ch in value.split("/")[0] if ch.isdigit())
    return value.lower()


def extract_mentions(text: str) -> tuple[list[Mention], str]:
    """Identifiers and error codes, and the text with their spans blanked out."""
    found: list[Mention] = []
    chars = list(text)
    masked = text
    lower = text.lower()
    for kind, family, pattern, group, needles in _PATTERNS:
        if needles and not any(n in lower for n in needles):
            continue
        hit = False
        for m in pattern.finditer(masked):
            value = m.group(group)
            if kind == "service" and not _service_like(value):
                continue
            norm = _normal(kind, family, value)
            found.append(Mention(kind, norm, _family(kind, family, norm), m.start(), m.end()))
            chars[m.start() : m.end()] = " " * (m.end() - m.start())
            hit = True
        if hit:
            masked = "".join(chars)
    return found, masked
