"""A chat model behind any OpenAI-compatible `/v1/chat/completions` endpoint.

It owns its retries (the client's are off): exponential backoff with jitter,
`Retry-After` honoured on 429, retries on 5xx, timeouts, dropped connections
and unreadable bodies. Structured output steps down json_schema → json_object
(schema attached, as llama.cpp takes it) → plain prompt when a server refuses
a mode, and the working mode is remembered per endpoint (see `modes`).
A reply that came (empty, refused, cut off) is returned as is, never retried.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import logging
import os
import time
from typing import Any, Literal

import openai

from harness.llm import modes
from harness.llm.http import http_library, shared_ssl_context
from harness.llm.modes import check_base_url, public_url
from harness.llm.openai_settings import DEFAULT_BASE_URL, OpenAISettings
from harness.llm.retry import backoff_delay, parse_retry_after
from harness.llm.types import ChatRequest, ChatResponse, ErrorReason, StructuredMode, TokenUsage

log = logging.getLogger(__name__)

PLACEHOLDER_KEY = "no-key"
"""Sent when no key is given: local servers (llama.cpp, vLLM, Ollama) ignore it."""

_REFUSAL_WORDS = ("response_format", "json_schema", "json_object", "schema")


def worst_case_seconds(settings: OpenAISettings) -> float:
    """The longest one `generate` call can take: every attempt to its deadline, and the longest wait before
    each retry (a Retry-After at its cap, or that retry's back-off before jitter). A run's bound is computed from it."""
    attempts = settings.max_attempts
    waits = sum(
        max(settings.max_retry_after, min(settings.backoff_max, settings.backoff_base * 2 ** (retry - 1)))
        for retry in range(1, attempts)
    )
    return attempts * settings.timeout + waits


class _Failure(Exception):
    """One attempt failed with a retryable (or final) transport reason."""

    def __init__(self, reason: ErrorReason, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.retry_after = retry_after


def transport_for(requested: str) -> str:
    """The transport a client really uses: aiohttp when asked for and available, else httpx.

    (aiohttp refuses credentials in the URL next to the Authorization header; `check_base_url` refuses them
    before any client is built, so a URL cannot choose the transport.)
    """
    usable = requested == "aiohttp" and _aiohttp_usable()
    return "aiohttp" if usable else "httpx"


@functools.cache
def _aiohttp_usable() -> bool:
    """openai has DefaultAioHttpClient and can build it: without its aiohttp adapter (openai installed without the
    `aiohttp` extra, or an aiohttp it cannot use) the class is a placeholder that raises when built."""
    client_class = getattr(openai, "DefaultAioHttpClient", None)
    if client_class is None or importlib.util.find_spec("aiohttp") is None:
        return False
    try:
        client_class(verify=shared_ssl_context())  # opens nothing: aiohttp's session is made at the first request
    except Exception as exc:
        log.warning("openai's aiohttp transport is not usable here (%s); using httpx", exc)
        return False
    return True


def http_client_for(transport: str) -> Any:
    """The `http_client` for `openai.AsyncOpenAI` on `transport` (see `transport_for`), sharing one TLS context."""
    if transport == "aiohttp":
        return openai.DefaultAioHttpClient(verify=shared_ssl_context())
    return openai.DefaultAsyncHttpxClient(verify=shared_ssl_context())


class OpenAIChatModel:
    """`openai:<model>` against OPENAI_BASE_URL (or `base_url`) with OPENAI_API_KEY (or `api_key`)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        settings: OpenAISettings | None = None,
        **overrides: Any,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        base = settings or OpenAISettings()
        self.settings = OpenAISettings.model_validate({**base.model_dump(), **overrides})
        self.base_url = check_base_url(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY
        self.endpoint: modes.Endpoint = (public_url(self.base_url), model)
        self.transport = transport_for(self.settings.transport)
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # --- lifecycle ------------------------------------------------------------------

    def _get_client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                max_retries=0,
                timeout=self.settings.timeout,
                http_client=http_client_for(self.transport),
            )
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP connections (call it in the loop that used the model)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def describe(self) -> dict[str, Any]:
        """Name and arguments, without the key (and without any user info in the URL)."""
        return {
            "name": self.name,
            "model": self.model,
            "base_url": public_url(self.base_url),
            "settings": self.settings.model_dump(mode="json"),
            "transport_in_use": self.transport,
            "structured_mode_in_use": modes.current_mode(self.endpoint, self.settings.structured_mode),
            "structured_mode_refusals": modes.refusals(self.endpoint),
        }

    def cache_identity(self) -> dict[str, Any]:
        """What changes the replies (for the response cache): not retries or timeouts."""
        s = self.settings
        return {
            "name": self.name,
            "base_url": public_url(self.base_url),
            "structured_mode": s.structured_mode,
            "max_tokens": s.max_tokens,
            "token_param": s.token_param,
            "extra_body": s.extra_body,
        }

    # --- one call -------------------------------------------------------------------

    async def generate(self, request: ChatRequest) -> ChatResponse:
        """Send the request, retrying transport failures; return the reply or the reason none came."""
        self._get_client()  # built outside the timed span: its first construction imports and loads TLS
        return await self._attempts(request, time.perf_counter())

    def _attempt_timeout(self, request: ChatRequest) -> float:
        return request.timeout or self.settings.timeout

    async def _attempts(self, request: ChatRequest, started: float) -> ChatResponse:
        settings = self.settings
        has_schema = request.response_schema is not None
        mode: StructuredMode = modes.current_mode(self.endpoint, settings.structured_mode) if has_schema else "plain"
        attempts = 0
        failures = 0
        while True:
            attempts += 1
            try:
                async with asyncio.timeout(self._attempt_timeout(request)):  # the whole attempt, body included
                    body = await self._send(request, mode)
            except TimeoutError:
                failure = _Failure("timeout", f"no whole reply within {self._attempt_timeout(request):g} s")
            except openai.APIStatusError as exc:
                refusal = self._mode_refusal(exc) if has_schema and mode != "plain" else None
                if refusal is not None:
                    log.info("%s refused structured mode %s (HTTP %s); stepping down", self.name, mode, exc.status_code)
                    # an explicit refusal is remembered now; a bare 400 only once the weaker mode has worked
                    mode = modes.step_down(self.endpoint, mode) if refusal == "explicit" else modes.weaker(mode)
                    continue
                failure = self._status_failure(exc)
            except openai.APITimeoutError as exc:
                if _dropped_not_timed_out(exc):
                    failure = _Failure("connection", self._redact(f"connection lost: {exc.__cause__ or exc}"))
                else:
                    failure = _Failure("timeout", f"no reply within {self._attempt_timeout(request):g} s")
            except openai.APIConnectionError as exc:
                failure = _Failure("connection", self._redact(f"{type(exc).__name__}: {exc}"))
            except _Failure as exc:
                failure = exc
            else:
                if has_schema:
                    modes.confirm(self.endpoint, mode)
                return self._response(body, mode, attempts, started)
            failures += 1
            if failure.reason == "client_error" or failures >= settings.max_attempts:
                return ChatResponse(
                    error=failure.reason,
                    error_detail=failure.detail[:500],
                    attempts=attempts,
                    structured_mode=mode,
                    latency_ms=(time.perf_counter() - started) * 1000.0,
                )
            if failure.retry_after is not None:
                delay = min(failure.retry_after, settings.max_retry_after)
            else:
                delay = backoff_delay(failures, settings.backoff_base, settings.backoff_max)
            log.info("%s attempt %d failed (%s); retrying in %.2f s", self.name, attempts, failure.reason, delay)
            await asyncio.sleep(delay)

    async def _send(self, request: ChatRequest, mode: StructuredMode) -> dict[str, Any]:
        """One HTTP request; the decoded body, or `_Failure('bad_response')` when it is not a completion."""
        settings = self.settings
        params, extra_body = request_params(self.model, request, mode, settings)
        # The client's documented raw path (`client.post`, cast_to=Response): the same URL, headers, auth, timeout
        # and status errors as chat.completions.create, without re-walking the typed parameters on every call
        # (the typed path's per-request CPU was half as much again as this one's).
        response = await self._get_client().post(
            "/chat/completions",
            body={**params, **extra_body},
            cast_to=http_library().Response,
            options={"timeout": request.timeout or settings.timeout},
        )
        try:
            body = response.json()
        except ValueError as exc:
            snippet = response.text[:200]
            raise _Failure("bad_response", self._redact(f"body is not JSON ({exc}): {snippet!r}")) from None
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list) or not body["choices"]:
            raise _Failure("bad_response", "body is not a chat completion (no choices)")
        return body

    def _response(self, body: dict[str, Any], mode: StructuredMode, attempts: int, started: float) -> ChatResponse:
        choice = _mapping(body["choices"][0])
        message = _mapping(choice.get("message"))
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        usage = _mapping(body.get("usage"))
        return ChatResponse(
            # a reply is data under test, but a key echoed into it must not reach a result file
            text=self._redact(content) if isinstance(content, str) else None,
            finish_reason=choice.get("finish_reason"),
            usage=TokenUsage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                total_tokens=int(usage.get("total_tokens") or 0),
            ),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            refusal=self._redact(message["refusal"])
            if isinstance(message.get("refusal"), str) and message["refusal"]
            else None,
            attempts=attempts,
            structured_mode=mode,
            raw=self._redact_raw(body),
        )

    # --- classification ---------------------------------------------------------------

    def _mode_refusal(self, exc: openai.APIStatusError) -> Literal["explicit", "bare"] | None:
        """Did the server refuse the response_format (rather than fail)?

        `explicit`: a 400/422 (or, before any success here, a 500 like llama.cpp's) whose body
        names response_format or the schema. `bare`: any other 400 before any success here.
        """
        text = _error_text(exc).lower()
        mentions = any(word in text for word in _REFUSAL_WORDS)
        confirmed = modes.is_confirmed(self.endpoint)
        if mentions and (exc.status_code in (400, 422) or (exc.status_code == 500 and not confirmed)):
            return "explicit"
        if exc.status_code == 400 and not confirmed:
            return "bare"
        return None

    def _status_failure(self, exc: openai.APIStatusError) -> _Failure:
        status = exc.status_code
        detail = self._redact(f"HTTP {status}: {_error_text(exc)[:300]}")
        if status == 429:
            return _Failure("rate_limited", detail, parse_retry_after(exc.response.headers))
        if status == 408:
            return _Failure("timeout", detail)
        if status >= 500:
            return _Failure("server_error", detail, parse_retry_after(exc.response.headers) if status == 503 else None)
        return _Failure("client_error", detail)

    def _redact(self, text: str) -> str:
        key = self._api_key
        return text.replace(key, "***") if len(key) >= 4 else text

    def _redact_raw(self, body: dict[str, Any]) -> dict[str, Any]:
        if len(self._api_key) < 4 or self._api_key == PLACEHOLDER_KEY:
            return body
        dumped = json.dumps(body)
        return json.loads(dumped.replace(self._api_key, "***")) if self._api_key in dumped else body


def request_params(
    model: str, request: ChatRequest, mode: StructuredMode, settings: OpenAISettings
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The chat-completions parameters and the extra body fields of one attempt.

    Pure, so the benchmark can send byte-for-byte the requests the harness sends.
    """
    params: dict[str, Any] = {"model": model, "messages": [m.model_dump() for m in request.messages]}
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.seed is not None:
        params["seed"] = request.seed
    max_tokens = settings.max_tokens or request.max_tokens
    extra_body = {**settings.extra_body, **request.extra_body}
    if max_tokens is not None:
        if settings.token_param == "max_tokens":
            params["max_tokens"] = max_tokens
        else:
            extra_body["max_completion_tokens"] = max_tokens
    response_format = _response_format(mode, request.response_schema, request.schema_name)
    if response_format is not None:
        # extra_body: the typed parameter would not carry llama.cpp's `schema` key reliably.
        extra_body["response_format"] = response_format
    return params, extra_body


def _response_format(mode: StructuredMode, schema: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    if schema is None or mode == "plain":
        return None
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    return {"type": "json_object", "schema": schema}


def _dropped_not_timed_out(exc: BaseException) -> bool:
    """A 'timeout' that was a lost connection: the aiohttp transport maps every aiohttp connection error
    (a server that closed the socket included) to httpx's ConnectTimeout; the original error is its cause."""
    try:
        from aiohttp import ClientConnectionError
    except ImportError:
        return False
    seen: BaseException | None = exc
    for _ in range(8):  # the chain is openai -> httpx -> aiohttp; a cycle cannot keep us here
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None or isinstance(seen, TimeoutError):
            return False
        if isinstance(seen, ClientConnectionError):
            return not isinstance(getattr(seen, "os_error", None), TimeoutError)  # a connect that timed out
    return False


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if body is None:
        try:
            return exc.response.text
        except Exception:  # a streamed or unread body
            return str(exc)
    return body if isinstance(body, str) else json.dumps(body, default=str)
