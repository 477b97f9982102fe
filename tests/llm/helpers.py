"""Small builders shared by the tests of harness.llm."""

from __future__ import annotations

import json
from typing import Any

from harness.devtools.local_server import LocalOpenAIServer
from harness.llm.openai_model import OpenAIChatModel
from harness.llm.types import ChatMessage, ChatRequest

SECRET_KEY = "sk-test-SECRET-7f3a9c1e"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
}
FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5.0, "max_attempts": 3}


def model_for(server: LocalOpenAIServer, name: str = "local-model", **settings: Any) -> OpenAIChatModel:
    """An OpenAIChatModel against the local server, with quick backoffs unless overridden."""
    return OpenAIChatModel(name, base_url=server.base_url, api_key=SECRET_KEY, **{**FAST, **settings})


def request(text: str = "hello", schema: dict[str, Any] | None = None, **fields: Any) -> ChatRequest:
    return ChatRequest(messages=[ChatMessage(role="user", content=text)], response_schema=schema, **fields)


def claims_message(*claim_ids: str) -> str:
    """A user message with a `<structured_claims>` block, as the prompts render it."""
    claims = [{"claim_id": cid, "statement": f"claim {cid}"} for cid in claim_ids]
    return f"<structured_claims>\n{json.dumps(claims)}\n</structured_claims>"
