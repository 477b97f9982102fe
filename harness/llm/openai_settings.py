"""The OpenAI-compatible client's settings: the one home of their names, types, bounds and defaults.

`OpenAIChatModel` validates its settings with this model, and the provider registry's `openai` settings
(`harness.run.providers`), which study files and the CLI's client flags are checked against, are built from
its fields, so a value the client would refuse is refused where it is written (exit 2, naming the key).
It imports no HTTP library: `vbench run` reads it at start-up, before `openai` loads.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.llm.types import StructuredMode

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where an `openai:` model is served when neither `base_url` nor OPENAI_BASE_URL says."""


class OpenAISettings(BaseModel):
    """Per-model client settings (a study file or flags set them; unknown keys are errors).

    Each field's description is its CLI flag's help (`--max-tokens` for `max_tokens`). A validator here would
    not reach the provider settings built from these fields: `harness.run.providers` refuses such a model.
    """

    model_config = ConfigDict(extra="forbid")
    structured_mode: StructuredMode = Field(
        default="json_schema", description="where the structured-output ladder starts (it only ever steps down)"
    )
    max_attempts: int = Field(default=4, ge=1, description="attempts per request, the first included")
    timeout: float = Field(
        default=120.0, gt=0, description="deadline of one attempt (connect, headers and whole body), in seconds"
    )
    """Unless the request sets its own: a hard deadline on the whole attempt (connect, headers and body), not the
    HTTP library's gap between two reads, so a server that trickles its body is cut."""
    backoff_base: float = Field(
        default=0.5, ge=0, description="seconds before the first retry (doubling per retry up to backoff_max)"
    )
    backoff_max: float = Field(default=30.0, ge=0, description="the longest back-off between two attempts, in seconds")
    max_retry_after: float = Field(default=120.0, ge=0, description="cap on a server's Retry-After wait, in seconds")
    max_connection_failures: int = Field(
        default=10,
        ge=1,
        description="stop the run when this many requests in a row to one endpoint fail with connection errors "
        "(exit 2; --resume continues)",
    )
    """The run's breaker (`harness.run.breaker`): an endpoint that went away stops the run in seconds instead of
    failing every remaining case. Not the client's to act on (it sees one request), and it changes no reply."""
    max_tokens: int | None = Field(
        default=None, ge=1, description="overrides the request's max_tokens (a small model's context may need less)"
    )
    token_param: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens",
        description="the request field that carries max_tokens (OpenAI's reasoning models take max_completion_tokens)",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="extra request body fields for every call, as a JSON object (the request's own win on a clash)",
    )
    transport: Literal["aiohttp", "httpx"] = Field(
        default="aiohttp", description="the openai client's HTTP transport (httpx: the client's stock one)"
    )
    """`aiohttp` is openai's DefaultAioHttpClient (less CPU per request); httpx is the client's
    default. Changes no reply, so it is not part of the cache key."""
