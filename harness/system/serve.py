"""The bundled system as a SUT: the protocol of `harness.system.protocol` served over HTTP (aiohttp.web).

`POST /verify` runs the whole system (parser, gatekeeper, model call through the openai client, policy,
persistence) for one session and answers the persisted `self_evaluation`; `GET /info` names the
implementation. Each request writes in its own namespace (its own in-memory store, or, with a shared
store URL, its own session ids), so concurrent requests never touch each other's rows.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import ValidationError

from harness import __version__
from harness.system import strictjson
from harness.system.models import ExecutorEmission, TraceEntry, VerifierCall, VerifierInput
from harness.system.pipeline import run_pipeline
from harness.system.policy import PolicySettings
from harness.system.protocol import PROTOCOL_VERSION, SutInfo, VerifyRequest
from harness.system.store import NewSession, Store

if TYPE_CHECKING:
    from harness.system.verifiers.llm import LLMVerifier

SUT_NAME = "verifier-bench bundled system"
PROMPT = "baseline"
API_KEY_ENV = "VBENCH_SUT_API_KEY"
"""The only key the bundled SUT sends to a model endpoint; never echoed anywhere.

Each request names the endpoint (`verifier.base_url`), so whoever can reach the SUT can have the key
sent to a server of their own: a dedicated key, never the user's OPENAI_API_KEY, and none when unset."""


def sut_api_key() -> str:
    """The key for the model endpoint a request names: VBENCH_SUT_API_KEY or a placeholder, never OPENAI_API_KEY
    (the openai client needs some key; given none, it would fall back to OPENAI_API_KEY)."""
    from harness.llm.openai_model import PLACEHOLDER_KEY

    return os.environ.get(API_KEY_ENV) or PLACEHOLDER_KEY


def is_loopback(host: str) -> bool:
    """Whether listening on `host` keeps the server on this machine (a name other than localhost: assume not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str | None:
    """A warning when a non-loopback listener would send the SUT's key wherever a request points it."""
    if is_loopback(host) or not os.environ.get(API_KEY_ENV):
        return None
    return (
        f"warning: listening on {host}, not loopback, with {API_KEY_ENV} set: anyone who can reach this server "
        f"can name their own verifier.base_url and receive that key. Bind 127.0.0.1 or unset {API_KEY_ENV}."
    )


Handler = Callable[[VerifyRequest, Store, str], Awaitable[dict[str, Any]]]


def namespaced(request: VerifyRequest, namespace: str) -> list[NewSession]:
    """The request's sessions as rows, every session id under `namespace` (ids need only be unique per request)."""
    sessions = [
        NewSession(f"{namespace}{other.id}", invocations=other.tool_invocations)
        for other in request.session.other_sessions
    ]
    sessions.append(
        NewSession(
            f"{namespace}{request.session.id}",
            question=request.session.question,
            invocations=request.session.tool_invocations,
            self_evaluation=request.session.self_evaluation,
            final_answer=request.executor.final_answer,
            structured_output_raw=request.executor.structured_output_raw,
        )
    )
    return sessions


async def verify(request: VerifyRequest, store: Store, namespace: str) -> dict[str, Any]:
    """One request through the whole system; the persisted `self_evaluation`."""
    from harness.llm.openai_model import OpenAIChatModel
    from harness.system.prompts import load_prompt
    from harness.system.verifiers.llm import LLMVerifier

    store.add_sessions(namespaced(request, namespace))
    model = OpenAIChatModel(
        request.verifier.model,
        base_url=request.verifier.base_url,
        api_key=sut_api_key(),
        timeout=request.settings.timeout_s,
        max_attempts=2,
    )
    verifier = DeadlineVerifier(LLMVerifier(model, load_prompt(PROMPT)), request.settings.timeout_s)
    trace: list[TraceEntry] | None = request.session.tool_trace_summary
    try:
        run = await run_pipeline(
            store,
            f"{namespace}{request.session.id}",
            request.session.question,
            ExecutorEmission(
                final_answer=request.executor.final_answer,
                structured_output_raw=request.executor.structured_output_raw,
            ),
            verifier,
            PolicySettings(claim_guard=request.settings.claim_guard),
            trace=trace,
            excerpt_chars=request.settings.excerpt_chars,
        )
    finally:
        await verifier.aclose()
    return dict(run.self_evaluation)


class DeadlineVerifier:
    """An LLM verifier bounded as a whole by the request's `timeout_s`: every attempt, back-off and Retry-After
    included, since that is all the SUT may spend waiting for its model (PROTOCOL.md), and the kit waits no longer
    than it plus a grace. A call cut off there is a transport failure: the policy makes it LOW_CONFID (§5 step 2)."""

    def __init__(self, inner: LLMVerifier, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds
        self.name = inner.name

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        start = time.perf_counter()
        try:
            async with asyncio.timeout(self.seconds):
                return await self.inner.verify(inputs)
        except TimeoutError:
            prompt = self.inner.prompt
            return VerifierCall(
                raw_reply=None,
                model=self.inner.model.name,
                prompt_name=prompt.name,
                prompt_version=prompt.version,
                prompt_hash=prompt.content_hash,
                latency_ms=(time.perf_counter() - start) * 1000,
                error=f"timeout: no reply within settings.timeout_s ({self.seconds:g} s), retries included",
            )

    def describe(self) -> dict[str, object]:
        return {**self.inner.describe(), "deadline_s": self.seconds}

    def replay_identity(self) -> dict[str, Any] | None:
        return None

    async def aclose(self) -> None:
        await self.inner.aclose()


class SutServer:
    """The aiohttp application of the bundled SUT; `store_url` None gives each request a fresh in-memory store."""

    def __init__(self, store_url: str | None = None, handler: Handler = verify, name: str = SUT_NAME) -> None:
        self.store_url = store_url
        self.handler = handler
        self.name = name
        self._shared: Store | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/verify", self._verify)
        app.router.add_get("/info", self._info)
        app.on_cleanup.append(self._close)
        return app

    async def _info(self, _request: web.Request) -> web.Response:
        return web.json_response(SutInfo(name=self.name, version=__version__, protocol=PROTOCOL_VERSION).model_dump())

    async def _verify(self, request: web.Request) -> web.Response:
        try:
            body = strictjson.loads_by_value(await request.text())  # numbers by value: a sibling's 2^53 + 1 stays exact
        except ValueError:
            return _bad_request("the body is not JSON")
        try:
            parsed = VerifyRequest.model_validate(body)
        except ValidationError as exc:
            return _bad_request("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10]))
        namespace = f"req-{uuid.uuid4().hex}/"
        if self.store_url is None:
            store = Store()
            try:
                persisted = await self.handler(parsed, store, namespace)
            finally:
                store.close()
        else:
            if self._shared is None:
                self._shared = Store(self.store_url)
            persisted = await self.handler(parsed, self._shared, namespace)
        return web.json_response({"self_evaluation": persisted})

    async def _close(self, _app: web.Application) -> None:
        if self._shared is not None:
            self._shared.close()


def _bad_request(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


async def serve(server: SutServer, host: str = "127.0.0.1", port: int = 0, port_file: Path | None = None) -> None:
    """Serve until cancelled; the bound port goes to `port_file` once requests are accepted."""
    warning = exposure_warning(host)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    await serve_app(server.app(), host, port, port_file, "SUT listening on http://{host}:{port}")


async def serve_app(app: web.Application, host: str, port: int, port_file: Path | None, banner: str) -> None:
    """Serve `app` until cancelled: `banner` (formatted with host and port) is printed and the bound port written
    to `port_file`, the number alone and whole, once requests are accepted."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    print(banner.format(host=host, port=bound), flush=True)
    if port_file is not None:
        tmp = port_file.with_name(port_file.name + ".tmp")
        tmp.write_text(str(bound), encoding="utf-8")
        tmp.replace(port_file)  # a reader never sees a half-written number
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
