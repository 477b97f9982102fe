"""An in-process chat model with canned or computed replies, for logic tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.llm.types import ChatRequest, ChatResponse

Reply = str | ChatResponse
FakeOutput = Reply | Sequence[Reply] | Callable[[ChatRequest], Reply]


class FakeChatModel:
    """Answers from `output`: one fixed reply, a sequence consumed in order, or a callable.

    A plain string becomes a `stop` reply; a `ChatResponse` is returned as is
    (to script errors, refusals or cut-off replies). Every request is kept in
    `requests`.
    """

    def __init__(self, output: FakeOutput, name: str = "fake") -> None:
        self.name = name
        self._output = output
        self._index = 0
        self.requests: list[ChatRequest] = []

    async def generate(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        reply = self._next(request)
        if isinstance(reply, ChatResponse):
            return reply
        return ChatResponse(text=reply, finish_reason="stop", structured_mode="plain")

    def _next(self, request: ChatRequest) -> Reply:
        output = self._output
        if callable(output):
            return output(request)
        if isinstance(output, str | ChatResponse):
            return output
        if self._index >= len(output):
            raise IndexError(f"FakeChatModel ran out of canned replies after {len(output)}")
        reply = output[self._index]
        self._index += 1
        return reply

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "fake"}
