"""The shared `openai_server` fixture: a fresh local OpenAI-compatible server per test.

Re-exported from tests/conftest.py so every test package can use it. The
server answers with `verifier_responder` (a valid verifier reply naming every
claim of the prompt) unless a test sets `server.responder`; faults are queued
with `server.script(...)`; `server.requests` holds every request body.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.devtools.local_server import LocalOpenAIServer
from harness.llm.modes import reset as reset_structured_modes


@pytest.fixture
def openai_server() -> Iterator[LocalOpenAIServer]:
    """A started `LocalOpenAIServer` on 127.0.0.1 (ephemeral port), with the remembered structured modes cleared."""
    reset_structured_modes()
    with LocalOpenAIServer() as server:
        yield server
    reset_structured_modes()
