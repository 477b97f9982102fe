"""Which structured-output mode works at which endpoint, remembered for the whole process.

A server that refuses `json_schema` refuses it every time: once a refusal has come back, every later request
at that (base URL, model) starts in the weaker mode, so the refusal is not paid once per case. The first requests
of a run are not held back to probe the mode: they go out side by side, and each one a refusal reaches steps down
by itself. A refusal comes back at once (the server checks the request before it generates anything), so at
most the first wave pays it; holding the others until a probe's whole reply came back would cost every run one
full reply's latency at the endpoints that accept the mode, which are most.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit, urlunsplit

from harness import UsageError
from harness.llm.types import STRUCTURED_MODES, StructuredMode

Endpoint = tuple[str, str]


def public_url(url: str) -> str:
    """`url` without user info, query or fragment: what may be logged and recorded."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


class BaseURLError(UsageError):
    """A base URL the client must not be given (exit code 2); the message never holds its credentials."""


def check_base_url(url: str) -> str:
    """`url`, refused when it carries user info (`user:password@host`).

    The HTTP client would send such credentials as `Authorization: Basic ...`, which replaces the Bearer API
    key (a real endpoint rejects the request), and a server that echoes the header would carry them into
    replies, results and the cache as base64. So they are refused: the key goes in OPENAI_API_KEY (or the
    variable a study's `api_key_env` names).
    """
    netloc = urlsplit(url).netloc
    if "@" in netloc:
        raise BaseURLError(
            f"the base URL {public_url(url)!r} carries credentials (user:password@ before the host), which the "
            "client would send in place of the API key: remove them and give the key in OPENAI_API_KEY (or the "
            "variable a study file's api_key_env names)"
        )
    return url


_lock = threading.Lock()
_modes: dict[Endpoint, StructuredMode] = {}
_confirmed: set[Endpoint] = set()
_refusals: dict[Endpoint, list[StructuredMode]] = {}


def current_mode(endpoint: Endpoint, start: StructuredMode) -> StructuredMode:
    """The mode to use now: the remembered one, or `start` (never a stronger one than `start`)."""
    with _lock:
        remembered = _modes.get(endpoint)
    if remembered is None:
        return start
    return max(remembered, start, key=STRUCTURED_MODES.index)


def is_confirmed(endpoint: Endpoint) -> bool:
    """True once a request in the current mode has succeeded at this endpoint."""
    with _lock:
        return endpoint in _confirmed


def confirm(endpoint: Endpoint, mode: StructuredMode) -> None:
    """Remember that `mode` works at `endpoint`."""
    with _lock:
        _modes[endpoint] = max(_modes.get(endpoint, mode), mode, key=STRUCTURED_MODES.index)
        _confirmed.add(endpoint)


def weaker(mode: StructuredMode) -> StructuredMode:
    """The next mode down the ladder (plain is the floor)."""
    return STRUCTURED_MODES[min(STRUCTURED_MODES.index(mode) + 1, len(STRUCTURED_MODES) - 1)]


def step_down(endpoint: Endpoint, refused: StructuredMode) -> StructuredMode:
    """Record that `refused` was refused; return the next weaker mode (plain is the floor)."""
    following = weaker(refused)
    with _lock:
        _modes[endpoint] = max(_modes.get(endpoint, following), following, key=STRUCTURED_MODES.index)
        seen = _refusals.setdefault(endpoint, [])
        if refused not in seen:  # the first requests may all meet the same refusal
            seen.append(refused)
        return _modes[endpoint]


def refusals(endpoint: Endpoint) -> list[StructuredMode]:
    """The modes this endpoint refused so far in this process (for the run manifest)."""
    with _lock:
        return list(_refusals.get(endpoint, []))


def reset() -> None:
    """Forget everything (tests; a long-lived process whose servers changed)."""
    with _lock:
        _modes.clear()
        _confirmed.clear()
        _refusals.clear()
