"""A server that echoes the API key back: the key must still never reach an error, a raw reply or a log."""

from __future__ import annotations

import json
import logging

import pytest
from aiohttp import web

from harness.devtools.local_server import LocalOpenAIServer
from tests.llm.helpers import SECRET_KEY, model_for, request

pytestmark = pytest.mark.usefixtures("transport")  # no key leaks on either transport of the openai client


class EchoingServer(LocalOpenAIServer):
    """Answers every chat request with the Authorization header it was sent, in the chosen form."""

    mode = "401"

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        if self.mode == "401":
            return web.json_response(
                {"error": {"message": f"Incorrect API key provided: {auth}", "type": "invalid_request_error"}},
                status=401,
            )
        if self.mode == "not_json":
            return web.Response(text=f"<html>gateway saw {auth}</html>", status=200, content_type="text/html")
        body = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": f"echo {auth}"}}
            ],
        }
        return web.json_response(body)


@pytest.mark.parametrize("mode", ["401", "not_json", "content"])
async def test_an_echoed_key_is_redacted_everywhere(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with EchoingServer() as server:
        server.mode = mode
        async with model_for(server, max_attempts=2) as model:
            reply = await model.generate(request())
    recorded = json.dumps(reply.model_dump(mode="json")) + caplog.text
    assert SECRET_KEY not in recorded
    if mode == "content":
        # the key was sent (the server echoed it) and was redacted from the reply text and its raw copy
        assert reply.text == "echo Bearer ***"
    else:
        assert reply.error is not None and "***" in (reply.error_detail or "")
