"""The LLM verifier: a prompt variant rendered for the inputs, sent to a chat model, the reply kept raw.

It does not judge the reply: `harness.system.reply` parses and classifies it
(empty, refusal, cut off, not JSON, schema error) and the policy decides.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from harness.llm.cache import CachingChatModel
from harness.llm.types import ChatModel, ChatRequest, ChatResponse
from harness.system.models import Usage, VerifierCall, VerifierInput, VerifierReply
from harness.system.prompts import PromptVariant

SCHEMA_NAME = "verifier_reply"


@functools.cache
def reply_schema() -> dict[str, Any]:
    """The JSON schema of the reply contract, sent as the structured-output constraint.

    Tighter than validation: every object is closed (no extra keys) and a
    `facts_checked` item has the legacy fields only. A grammar-constrained
    small model otherwise loops on open objects until max_tokens (seen with
    llama.cpp and SmolLM2); the reply is still validated leniently.
    """
    schema = copy.deepcopy(VerifierReply.model_json_schema())
    schema["$defs"]["LegacyFact"] = {
        "type": "object",
        "properties": {
            "claim_id": {"type": "string"},
            "fact": {"type": "string"},
            "verification": {"$ref": "#/$defs/LegacyVerification"},
            "detail": {"type": "string"},
        },
        "required": ["claim_id", "verification"],
    }
    for node in [schema, *schema["$defs"].values()]:
        if node.get("type") == "object":
            node["additionalProperties"] = False
    return schema


class LLMVerifier:
    """A `Verifier` over any `ChatModel` and one `PromptVariant`."""

    def __init__(self, model: ChatModel, prompt: PromptVariant, timeout: float | None = None) -> None:
        self.model = model
        self.prompt = prompt
        self.timeout = timeout
        self.name = model.name

    def request_for(self, inputs: VerifierInput) -> ChatRequest:
        """The chat request for these inputs: rendered messages, the variant's sampling, the reply schema."""
        return ChatRequest(
            messages=self.prompt.render(inputs),
            temperature=self.prompt.temperature,
            seed=self.prompt.seed,
            max_tokens=self.prompt.max_tokens,
            response_schema=reply_schema(),
            schema_name=SCHEMA_NAME,
            timeout=self.timeout,
        )

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        response = await self.model.generate(self.request_for(inputs))
        return self.call_from(response)

    def call_from(self, response: ChatResponse) -> VerifierCall:
        """The `VerifierCall` the pipeline reads, from what the model returned."""
        error = None
        if response.error is not None:
            error = f"{response.error}: {response.error_detail}" if response.error_detail else response.error
        return VerifierCall(
            raw_reply=response.text,
            model=self.model.name,
            prompt_name=self.prompt.name,
            prompt_version=self.prompt.version,
            prompt_hash=self.prompt.content_hash,
            finish_reason=response.finish_reason,
            latency_ms=response.latency_ms,
            usage=Usage(**response.usage.model_dump()),
            error=error,
            refusal=response.refusal,
            attempts=response.attempts,
            cached=response.cached,
        )

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "model": self.model.describe(), "prompt": self.prompt.describe()}

    def replay_identity(self) -> dict[str, Any] | None:
        """What decides this verifier's replies when they come through a response cache; None without one.

        A runner may replay a whole earlier result only under the same identity (`harness.run.replay`).
        """
        if not isinstance(self.model, CachingChatModel):
            return None
        return {"cache": self.model.identity(), "prompt": self.prompt.describe(), "timeout": self.timeout}

    async def aclose(self) -> None:
        """Close the model's connections, if it holds any."""
        closer = getattr(self.model, "aclose", None)
        if callable(closer):
            await closer()
