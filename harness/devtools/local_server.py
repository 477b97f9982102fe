"""A local OpenAI-compatible server for tests and benchmarks (aiohttp, keep-alive, async).

`/v1/chat/completions` and `/v1/models` on 127.0.0.1. Replies come from a
responder (request body → reply text); faults are scripted in a queue, one
per request, in arrival order; a server can also refuse response_format
types the way llama.cpp refuses `json_schema` (HTTP 500, validation message).
Every request body is recorded.

    with LocalOpenAIServer(latency_ms=5) as server:
        server.script(Fault(kind="rate_limit", retry_after="1"))
        ... OpenAIChatModel("m", base_url=server.base_url) ...

    python -m harness.devtools.local_server --port 8011 --latency-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import signal
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from harness.devtools.responders import verifier_responder

Responder = Callable[[dict[str, Any]], str]
FaultKind = Literal[
    "rate_limit",
    "server_error",
    "slow",
    "malformed",
    "length",
    "empty",
    "refusal",
    "drop",
    "not_json_content",
    "trickle",
    "truncated",
    "html",
]

REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


class Fault(BaseModel):
    """One scripted misbehaviour, applied to one request.

    rate_limit: 429 with `Retry-After: retry_after`; server_error: HTTP `status`;
    slow: the normal reply after `delay_s` more seconds; malformed: a 200 whose
    body is broken JSON; length: the reply cut in half with finish_reason
    `length`; empty: empty content; refusal: `message.refusal` set, no content;
    drop: the connection closed without a response; not_json_content: prose;
    trickle: the normal reply's headers at once, then its body one byte every
    `delay_s` seconds (a read timeout between bytes never fires); truncated: a
    200 that promises the whole body (Content-Length) and closes after half;
    html: a 200 whose body is an HTML error page, not JSON.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: FaultKind
    retry_after: str | None = "1"
    delay_s: float = 1.0
    status: int = 500


# --- the server -----------------------------------------------------------------------


class LocalOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 (ephemeral port by default).

    Use it as a context manager (own thread and event loop) or, inside a
    running loop, with `async with` / `start_async()` (same loop).
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_ms: float = 0.0,
        model: str = "local-model",
        refuse_formats: Iterable[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        record: bool = True,
    ) -> None:
        self.record = record
        """Keep every request body and Authorization header (off for long benchmark runs: memory stays flat)."""
        self.responder: Responder = responder or verifier_responder
        self.latency_ms = latency_ms
        self.model = model
        self.refuse_formats = set(refuse_formats)
        self.host = host
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        """The Authorization header of each request (tests check the key was sent, and nowhere else)."""
        self.faults_applied: list[str] = []
        self.models_requests = 0
        """How many `GET /v1/models` came (a run's reachability probe), counted apart from chat requests."""
        self.in_flight = 0
        self.max_in_flight = 0
        """The most chat requests the server was handling at once (concurrency, seen from the server)."""
        self._faults: collections.deque[Fault] = collections.deque()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- scripting and inspection --------------------------------------------------

    def script(self, *faults: Fault | FaultKind) -> None:
        """Queue faults: the next requests get them, one each, in order."""
        self._faults.extend(f if isinstance(f, Fault) else Fault(kind=f) for f in faults)

    @property
    def pending_faults(self) -> int:
        return len(self._faults)

    @property
    def request_count(self) -> int:
        return len(self.requests)

    def response_formats(self) -> list[str | None]:
        """The response_format type of every request received (None: no response_format)."""
        out: list[str | None] = []
        for body in self.requests:
            rf = body.get("response_format")
            out.append(rf.get("type") if isinstance(rf, dict) else None)
        return out

    def reset(self) -> None:
        """Forget recorded requests and pending faults."""
        self.requests.clear()
        self.authorizations.clear()
        self.faults_applied.clear()
        self.models_requests = 0
        self.max_in_flight = 0
        self._faults.clear()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # --- handlers -------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        return app

    async def _models(self, request: web.Request) -> web.Response:
        self.models_requests += 1
        data = [{"id": self.model, "object": "model", "created": 0, "owned_by": "local"}]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._handle_chat(request)
        finally:
            self.in_flight -= 1

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except ValueError as exc:
            return _error(400, f"request body is not JSON: {exc}", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request_error")
        if self.record:
            self.requests.append(body)
            self.authorizations.append(request.headers.get("Authorization"))
        rf = body.get("response_format")
        rf_type = rf.get("type") if isinstance(rf, dict) else None
        if rf_type in self.refuse_formats:
            return _format_refusal(rf_type)
        fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            self.faults_applied.append(fault.kind)
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000.0)
        if fault is None:
            return self._completion(body, self._reply_text(body), "stop")
        return await self._apply(fault, request, body)

    def _reply_text(self, body: dict[str, Any]) -> str:
        return self.responder(body)

    async def _apply(self, fault: Fault, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        kind = fault.kind
        if kind == "rate_limit":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return _error(429, "Rate limit reached for requests", "rate_limit_error", headers)
        if kind == "server_error":
            return _error(fault.status, "The server had an error while processing your request", "server_error")
        if kind == "slow":
            await asyncio.sleep(fault.delay_s)
            return self._completion(body, self._reply_text(body), "stop")
        if kind == "malformed":
            return web.Response(
                status=200,
                text='{"id": "chatcmpl-x", "choices": [{"message": {"content": "',
                content_type="application/json",
            )
        if kind == "length":
            text = self._reply_text(body)
            return self._completion(body, text[: max(1, len(text) // 2)], "length")
        if kind == "empty":
            return self._completion(body, "", "stop")
        if kind == "refusal":
            return self._completion(body, None, "stop", refusal=REFUSAL_TEXT)
        if kind == "not_json_content":
            return self._completion(body, "The answer looks fine to me.", "stop")
        if kind == "html":
            return web.Response(
                status=200, text="<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"
            )
        if kind in ("trickle", "truncated"):
            return await self._stream(request, body, trickle=kind == "trickle", delay_s=fault.delay_s)
        # drop: close the connection without answering
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=500)  # never reaches the client: the socket is gone

    async def _stream(
        self, request: web.Request, body: dict[str, Any], *, trickle: bool, delay_s: float
    ) -> web.StreamResponse:
        """The normal reply with its full Content-Length, sent a byte at a time (trickle) or cut in half."""
        data = self._completion(body, self._reply_text(body), "stop").body
        assert isinstance(data, bytes)
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.content_length = len(data)
        await response.prepare(request)
        if trickle:
            for i in range(len(data)):
                await response.write(data[i : i + 1])
                await asyncio.sleep(delay_s)
            await response.write_eof()
            return response
        await response.write(data[: len(data) // 2])
        if request.transport is not None:
            request.transport.close()
        return response

    def _completion(
        self, body: dict[str, Any], text: str | None, finish: str, refusal: str | None = None
    ) -> web.Response:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [] if isinstance(m, dict))
        prompt_tokens = prompt_chars // 4
        completion_tokens = len(text or "") // 4
        payload = {
            "id": f"chatcmpl-local-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": refusal},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return web.json_response(payload)

    # --- lifecycle ------------------------------------------------------------------

    async def start_async(self) -> LocalOpenAIServer:
        """Start serving in the running event loop."""
        self._runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        server = site._server  # the bound socket tells the ephemeral port
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        return self

    async def stop_async(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> LocalOpenAIServer:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    def start(self) -> LocalOpenAIServer:
        """Start serving in a background thread with its own event loop."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="local-openai-server", daemon=True)
        self._thread.start()
        ready.wait(timeout=30)
        if failure:
            raise RuntimeError(f"local server failed to start: {failure[0]}") from failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop = None
            self._thread = None

    def __enter__(self) -> LocalOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.json_response(body, status=status, headers=headers)


def _format_refusal(rf_type: str) -> web.Response:
    """How llama.cpp's server answers a response_format it does not take: 500 and a validation message."""
    message = (
        "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
        f"  Input should be 'text' or 'json_object' [type=literal_error, input_value='{rf_type}', input_type=str]"
    )
    return _error(500, message, "internal_server_error")


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted; print the base URL first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--model", default="local-model")
    parser.add_argument("--refuse-format", action="append", default=[], help="response_format type to refuse")
    parser.add_argument("--no-record", action="store_true", help="keep no request bodies (long benchmark runs)")
    args = parser.parse_args(argv)

    async def serve() -> None:
        server = LocalOpenAIServer(
            latency_ms=args.latency_ms,
            model=args.model,
            refuse_formats=args.refuse_format,
            host=args.host,
            port=args.port,
            record=not args.no_record,
        )
        await server.start_async()
        print(server.base_url, flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop_async()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
