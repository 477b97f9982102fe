"""The chat-model contract every model client speaks: a request, a response, a protocol.

Plain pydantic values, so that a request can be hashed for the cache and a
response stored and replayed. Nothing here holds a secret.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

StructuredMode = Literal["json_schema", "json_object", "plain"]
"""How the reply is constrained: a JSON schema, a JSON object (schema attached), or the prompt alone."""

STRUCTURED_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "plain")
"""The fallback ladder, strongest first."""

ErrorReason = Literal["timeout", "rate_limited", "server_error", "connection", "bad_response", "client_error"]
"""Why no reply came after all attempts (a transport failure, not a bad answer)."""


class ChatMessage(BaseModel):
    """One chat message."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """What to ask: the messages and the sampling parameters of one call."""

    model_config = ConfigDict(extra="forbid")
    messages: list[ChatMessage]
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    response_schema: dict[str, Any] | None = None
    schema_name: str = "reply"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    timeout: float | None = None
    """Seconds per attempt; None: the model's own default."""


class TokenUsage(BaseModel):
    """Token counts as the server reported them (0 when it did not)."""

    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatResponse(BaseModel):
    """What one call returned, after retries.

    `text` is the reply as sent (possibly empty, cut off or not JSON: the
    caller's reply parser judges it). `error` is set only when no reply came.
    """

    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    finish_reason: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_ms: float = 0.0
    refusal: str | None = None
    error: ErrorReason | None = None
    error_detail: str | None = None
    attempts: int = 1
    structured_mode: StructuredMode | None = None
    raw: dict[str, Any] | None = None
    cached: bool = False


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a `ChatRequest`.

    `name` identifies the model in results (e.g. `openai:gpt-4o-mini`);
    `describe()` gives its name and arguments for the run manifest, never a secret.
    """

    name: str

    async def generate(self, request: ChatRequest) -> ChatResponse: ...

    def describe(self) -> dict[str, Any]: ...
