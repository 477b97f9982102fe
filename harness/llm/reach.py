"""Can an OpenAI-compatible endpoint be reached at all? One free request, before a run sends any completion.

`GET <base_url>/models` costs nothing at every provider and answers at every OpenAI-compatible server that is
up; any HTTP answer (401, 404 included) means a server is there. Only a transport failure (a refused
connection, an unknown host, no answer within the deadline, a TLS failure) means it cannot be reached. No key
is sent: the answer's status is not read, so the probe needs none, and a key never goes where it is not used.
"""

from __future__ import annotations

from harness.llm.http import http_library, shared_ssl_context
from harness.llm.modes import public_url

PROBE_TIMEOUT = 10.0
"""Seconds the probe waits to connect and for an answer: a refused port or an unknown host fails at once; a
host that drops packets costs this long."""


def unreachable(base_url: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """None when `GET <base_url>/models` gets any HTTP answer; else why it got none (never holding credentials)."""
    url = base_url.rstrip("/") + "/models"
    http = http_library()  # the model clients' own library and TLS context: a run loads each once
    try:
        with http.Client(
            timeout=timeout, follow_redirects=False, trust_env=True, verify=shared_ssl_context()
        ) as client:
            client.get(url, headers={"Accept": "application/json"})
    except http.TimeoutException:
        return f"no answer from {public_url(url)} within {timeout:g} s"
    except http.HTTPError as exc:
        return f"{type(exc).__name__}: {_reason(exc)}"
    except OSError as exc:  # raised below httpx by some platforms' resolvers
        return f"{type(exc).__name__}: {exc}"
    return None


def _reason(exc: BaseException) -> str:
    """The innermost cause's words (`[Errno 111] Connection refused`, `Name or service not known`)."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__
