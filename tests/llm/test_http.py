"""The reachability probe and the model clients share one HTTP library and one TLS context per process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.devtools.local_server import LocalOpenAIServer

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import asyncio, sys
from harness.llm.http import shared_ssl_context
from harness.llm.reach import unreachable
from harness.llm.openai_model import OpenAIChatModel
from harness.llm.types import ChatMessage, ChatRequest
assert unreachable(sys.argv[1]) is None
async def reply():
    async with OpenAIChatModel("m", base_url=sys.argv[1], api_key="unused") as model:
        assert (await model.generate(ChatRequest(messages=[ChatMessage(role="user", content="hi")]))).error is None
asyncio.run(reply())
others = sorted(m for m in ("httpx", "httpx2") if m in sys.modules)
print(shared_ssl_context.cache_info().misses, " ".join(others))
"""


def test_a_probe_and_a_client_load_one_http_library_and_one_tls_context(openai_server: LocalOpenAIServer) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, openai_server.base_url], capture_output=True, text=True, check=True, cwd=ROOT
    )
    contexts, libraries = done.stdout.split(maxsplit=1)
    assert contexts == "1" and libraries.split() == ["httpx2"]
