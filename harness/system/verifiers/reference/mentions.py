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
_ERRNO_NEEDLES = (
    "econn",
    "etimedout",
    "enospc",
    "eacces",
    "enoent",
    "epipe",
    "unreach",
    "eaddrinuse",
    "emfile",
    "enfile",
    "enomem",
    "eai_again",
    "nxdomain",
    "servfail",
)
_K8S_NEEDLES = (
    "oom",
    "crashloop",
    "imagepull",
    "errimage",
    "evicted",
    "failed",
    "notready",
    "cannotrun",
    "configerror",
    "deadline",
    "preempted",
    "unhealthy",
    "backoff",
)
_HTTP_NEEDLES = (
    "error",
    "gateway",
    "unavailable",
    "not found",
    "too many",
    "unauthorized",
    "forbidden",
    "bad request",
    "conflict",
    "timeout",
    "too large",
    " u",
    " nr",
    " dc",
)

# Phrase patterns (codes written with words around them), scanned over the text in order; each runs only if
# one of its needles is in the lower-cased text: (kind, family, pattern, value group, needles).
_PHRASES: tuple[tuple[str, str, re.Pattern[str], int, tuple[str, ...]], ...] = tuple(
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
        ("code", "errno", rf"\b(?:{_ERRNO})\b", 0, _ERRNO_NEEDLES),
        ("code", "k8s", rf"\b(?:{_K8S_REASONS})\b", 0, _K8S_NEEDLES),
        ("code", "http", r"(?i)\bHTTP(?:/\d(?:\.\d)?)?\"?\s*[:=]?\s*([1-5]\d\d)\b", 1, ("http",)),
        (
            "code",
            "http",
            r"(?i)\b(?:status(?:[ _]?code)?|statusCode|code|returned|returning|returns|responded|errors?|with)"
            r"[\"']?\s*[:=]?\s*[\"']?([1-5]\d\d)\b(?!\s*(?:ms|s\b|%|req|of|/|\.\d))",
            1,
            ("status", "code", "return", "respond", "error", "with"),
        ),
        ("code", "http", rf"\b([1-5]\d\d)\s+(?:{_HTTP_TEXT}|UF|UT|UH|UO|URX|NR|UC|DC)\b", 1, _HTTP_NEEDLES),
        ("code", "http", r"\b([45]\d\d)s\b", 1, _DIGIT_S),
        ("code", "http_class", r"(?i)\b([1-5]xx)\b", 1, ("xx",)),
        ("port", "port", r"(?i)\bports?\s*[:=]?\s*(\d{1,5})\b|\b(\d{1,5})/(?:tcp|udp)\b", 0, ("port", "tcp", "udp")),
        (
            "version",
            "version",
            r"(?i)\b(?:version|app|release)\s+v?(\d+\.\d+)\b(?!\.\d)",
            1,
            ("version", "app", "release"),
        ),
    )
)

# Identifier shapes, tried in order on each candidate token (a run holding `-`, `.`, `_`, `/` or a CamelCase word).
_TOKENS: tuple[tuple[str, str, re.Pattern[str], int], ...] = tuple(
    (kind, family, re.compile(pattern), group)
    for kind, family, pattern, group in (
        ("exception", "exception", r"(?:[a-z_][a-z0-9_]*\.)*([A-Z][A-Za-z0-9]+?(?:Exception|Error))", 1),
        ("ip", "ip", r"(?:\d{1,3}\.){3}\d{1,3}", 0),
        (
            "host",
            "host",
            r"(?i)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
            r"\.(?:com|net|org|io|internal|local|svc|dev|cloud|corp|lan|example)",
            0,
        ),
        ("region", "region", rf"(?:us|eu|ap|sa|ca|me|af|il|mx|cn)-(?:gov-)?(?:{_REGION_DIR})-\d[a-f]?", 0),
        ("region", "region", rf"(?:us|europe|asia|australia|northamerica|southamerica)-(?:{_REGION_DIR})\d", 0),
        ("version", "version", r"v?\d+\.\d+\.\d+(?:-[a-z0-9]+(?:\.[a-z0-9]+)*)?|v\d+\.\d+", 0),
        ("pod", "pod", r"[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-(?=[a-z]*\d)[a-z0-9]{4,10}-[a-z0-9]{5}", 0),
        (
            "instance",
            "instance",
            r"i-[0-9a-f]{8,17}|[a-zA-Z][a-z0-9]*(?:-[a-z0-9]+)*-(?:\d{1,3}[a-z]?|\d{6,})(?:-[a-z0-9]{1,5})?",
            0,
        ),
        ("symbol", "symbol", r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+", 0),
        ("symbol", "camel", r"[A-Z][a-z0-9]{2,}(?:[A-Z]+[a-z0-9]*)+", 0),
        ("symbol", "symbol", r"[a-z][\w-]*(?:\.[a-z][\w-]*)+", 0),
        ("path", "path", r"/(?:[\w.@-]+/)*[\w.@-]*", 0),
        ("service", "service", r"[a-zA-Z][a-z0-9]*(?:-[a-z][a-z0-9]*)+", 0),
    )
)
_CANDIDATE = re.compile(r"[\w.@/-]*[-._/@][\w.@/-]*|[A-Z][a-z0-9]{2,}[A-Z]\w*")
_EDGE = "._-@"

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


def _pieces(token: str, start: int) -> list[tuple[str, int]]:
    """A candidate token split at inner `/` (`pod/x`, `host/path`), a leading `/` kept for paths."""
    if token.startswith("//"):
        lead = len(token) - len(token.lstrip("/"))
        token, start = token[lead:], start + lead
    elif token.startswith("/"):
        return [(token.rstrip(_EDGE + "/"), start)]
    out, offset = [], 0
    for part in token.split("/"):
        stripped = part.strip(_EDGE)
        if stripped:
            out.append((stripped, start + offset + part.index(stripped)))
        offset += len(part) + 1
    return out


def _classify_token(token: str, start: int) -> Mention | None:
    for kind, family, pattern, group in _TOKENS:
        m = pattern.fullmatch(token)
        if m is None or (kind == "service" and not _service_like(token)):
            continue
        norm = _normal(kind, family, m.group(group))
        return Mention(kind, norm, _family(kind, family, norm), start, start + len(token))
    return None


def extract_mentions(text: str) -> tuple[list[Mention], str]:
    """Identifiers and error codes, and the text with their spans blanked out."""
    found: list[Mention] = []
    chars = list(text)
    masked = text
    lower = text.lower()
    for kind, family, pattern, group, needles in _PHRASES:
        if needles and not any(n in lower for n in needles):
            continue
        hit = False
        for m in pattern.finditer(masked):
            value = m.group(group) if group == 0 or m.group(group) is not None else m.group(0)
            norm = _normal(kind, family, value)
            found.append(Mention(kind, norm, _family(kind, family, norm), m.start(), m.end()))
            chars[m.start() : m.end()] = " " * (m.end() - m.start())
            hit = True
        if hit:
            masked = "".join(chars)
    for m in _CANDIDATE.finditer(masked):
        for token, start in _pieces(m.group(0), m.start()):
            mention = _classify_token(token, start)
            if mention is not None:
                found.append(mention)
                chars[mention.start : mention.end] = " " * (mention.end - mention.start)
    return found, "".join(chars)
