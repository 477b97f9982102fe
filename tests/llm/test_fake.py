"""FakeChatModel: canned, sequenced and computed replies."""

from __future__ import annotations

import pytest

from harness.llm import ChatModel, FakeChatModel
from harness.llm.types import ChatResponse
from tests.llm.helpers import request


async def test_a_fixed_reply_and_the_requests_are_kept() -> None:
    fake = FakeChatModel("{}")
    assert isinstance(fake, ChatModel)
    reply = await fake.generate(request("q"))
    assert (reply.text, reply.finish_reason, reply.error) == ("{}", "stop", None)
    assert fake.requests[0].messages[0].content == "q"


async def test_a_sequence_is_consumed_in_order_and_then_runs_out() -> None:
    fake = FakeChatModel(["a", ChatResponse(text=None, error="timeout")])
    assert (await fake.generate(request())).text == "a"
    assert (await fake.generate(request())).error == "timeout"
    with pytest.raises(IndexError, match="ran out"):
        await fake.generate(request())


async def test_a_callable_computes_the_reply_from_the_request() -> None:
    fake = FakeChatModel(lambda req: req.messages[-1].content[::-1], name="rev")
    assert (await fake.generate(request("abc"))).text == "cba"
    assert fake.describe()["name"] == "rev"
