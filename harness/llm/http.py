"""The HTTP library the openai client is built on, and the one TLS context every client of a process shares.

The reachability probe (`harness.llm.reach`) and the model clients use the same library and context, so a run
imports one HTTP library and loads the CA bundle once (a cost paid each time it is loaded).
"""

from __future__ import annotations

import functools
from typing import Any


def http_library() -> Any:
    """The HTTP library the installed openai release is built on (httpx2; httpx for older releases)."""
    try:
        import httpx2 as http
    except ImportError:  # older openai releases are built on httpx
        import httpx as http  # type: ignore[no-redef]
    return http


@functools.cache
def shared_ssl_context() -> Any:
    """One TLS context for every client: each client would load the CA bundle again otherwise."""
    return http_library().create_ssl_context()
