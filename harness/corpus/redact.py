"""Pattern redaction of secrets in imported production data: API keys, bearer tokens, passwords in URLs, emails.

Every string of a session (keys too) is scanned; each hit is replaced by `[REDACTED:<kind>]` and recorded as
a `Redaction` (where and what kind, never the secret), so a reviewer sees what was taken out and why.
Patterns over-redact rather than leak: a false hit costs a word of evidence, a miss leaks a credential.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # user:password@ in a URL: only the password goes
    ("url_password", re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+):([^\s/@]+)@")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    (
        "api_key",
        re.compile(
            r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}"
            r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})"
        ),
    ),
    (
        "api_key",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])((?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret"
            r"|password|passwd)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;}&]{6,})"
        ),
    ),
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
)
"""(kind, pattern), applied in order; a pattern with two groups keeps the first (the key name or user)."""


class Redaction(BaseModel):
    """One kind of secret taken out of one string: its key path and how many times."""

    model_config = ConfigDict(frozen=True)
    path: str
    kind: str
    count: int


def mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact_text(text: str) -> tuple[str, dict[str, int]]:
    """`text` with every secret replaced, and the number of hits per kind."""
    hits: dict[str, int] = {}
    for kind, pattern in PATTERNS:

        def swap(match: re.Match[str], kind: str = kind) -> str:
            if mark(kind) in match.group(0):
                return match.group(0)
            hits[kind] = hits.get(kind, 0) + 1
            if kind == "url_password":
                return f"{match.group(1)}:{mark(kind)}@"
            if match.re.groups == 2:
                return f"{match.group(1)}{mark(kind)}"
            return mark(kind)

        text = pattern.sub(swap, text)
    return text, hits


def redact(value: Any, path: str = "") -> tuple[Any, list[Redaction]]:
    """A copy of a JSON value with every string (and key) redacted, and the list of redactions by key path."""
    found: list[Redaction] = []
    if isinstance(value, str):
        out, hits = redact_text(value)
        return out, [Redaction(path=path or "<root>", kind=k, count=n) for k, n in sorted(hits.items())]
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, item in value.items():
            new_key, key_hits = redact_text(str(key))
            where = f"{path}.{key}" if path else str(key)
            if key_hits:
                where = f"{path}.{new_key}" if path else new_key
                found += [Redaction(path=f"{where} (key)", kind=k, count=n) for k, n in sorted(key_hits.items())]
            result[new_key], more = redact(item, where)
            found += more
        return result, found
    if isinstance(value, list):
        items: list[Any] = []
        for i, item in enumerate(value):
            new, more = redact(item, f"{path}[{i}]")
            items.append(new)
            found += more
        return items, found
    return value, found
