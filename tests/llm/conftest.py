"""Fixtures of the harness.llm tests."""

from __future__ import annotations

import pytest

from tests.llm.helpers import FAST


@pytest.fixture(params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test on both transports of the openai client: the default (aiohttp) and httpx.

    `model_for` builds its models with these settings; modules opt in with
    `pytestmark = pytest.mark.usefixtures("transport")`.
    """
    monkeypatch.setitem(FAST, "transport", request.param)
    return str(request.param)
