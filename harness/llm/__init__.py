"""Model access: a small chat-model protocol, an OpenAI-compatible client, a fake, a response cache.

Imports nothing else of `harness`. `OpenAIChatModel` is loaded on first use (importing
`openai` takes about two seconds). The local test server and the llama.cpp helpers are development
tooling and live in `harness.devtools`, which this layer never imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.llm.cache import CachingChatModel
from harness.llm.fake import FakeChatModel
from harness.llm.modes import reset as reset_structured_modes
from harness.llm.openai_settings import OpenAISettings
from harness.llm.types import (
    STRUCTURED_MODES,
    ChatMessage,
    ChatModel,
    ChatRequest,
    ChatResponse,
    ErrorReason,
    StructuredMode,
    TokenUsage,
)

if TYPE_CHECKING:
    from harness.llm.openai_model import OpenAIChatModel

__all__ = [
    "STRUCTURED_MODES",
    "CachingChatModel",
    "ChatMessage",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ErrorReason",
    "FakeChatModel",
    "OpenAIChatModel",
    "OpenAISettings",
    "StructuredMode",
    "TokenUsage",
    "reset_structured_modes",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatModel":
        from harness.llm.openai_model import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module 'harness.llm' has no attribute {name!r}")
