"""Shared fixtures. Real model requests are never made from tests: every model is a fake or a local server."""

from __future__ import annotations

import os

import pytest

from tests.llm.server_fixtures import openai_server  # noqa: F401 - the shared local OpenAI-compatible server
from tests.postgres_fixtures import postgres_url  # noqa: F401 - the shared throwaway PostgreSQL cluster


@pytest.fixture(autouse=True)
def _no_real_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real provider: drop any endpoint or key from the environment."""
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID"):
        if var in os.environ:
            monkeypatch.delenv(var)
