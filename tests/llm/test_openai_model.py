"""OpenAIChatModel over real HTTP against the local server: every fault ends as specified."""

from __future__ import annotations

import errno
import json
import logging
import time
from types import SimpleNamespace

import aiohttp
import openai
import pytest

from harness.devtools.local_server import REFUSAL_TEXT, Fault, LocalOpenAIServer
from harness.llm import openai_model
from harness.llm.http import http_library
from harness.llm.modes import BaseURLError
from harness.llm.openai_model import OpenAIChatModel, OpenAISettings, public_url
from tests.llm.helpers import SCHEMA, SECRET_KEY, claims_message, model_for, request
from tests.timing import assert_within

pytestmark = pytest.mark.usefixtures("transport")  # every test here runs on both transports


async def test_the_transport_asked_for_is_used(openai_server: LocalOpenAIServer, transport: str) -> None:
    assert OpenAIChatModel("m", base_url=openai_server.base_url).transport == "aiohttp"  # the default
    async with model_for(openai_server) as model:
        reply = await model.generate(request())
        assert model.describe()["transport_in_use"] == transport
        http_client = type(model._get_client()._client).__name__.lower()
        assert ("aiohttp" in http_client) == (transport == "aiohttp"), http_client
    assert reply.error is None and reply.text


async def test_a_plain_call_sends_the_parameters_and_keeps_usage_latency_and_raw(
    openai_server: LocalOpenAIServer,
) -> None:
    async with model_for(openai_server) as model:
        reply = await model.generate(request(claims_message("C1", "C2"), temperature=0.0, seed=7, max_tokens=300))
    assert reply.error is None and reply.attempts == 1 and reply.cached is False
    assert [c["claim_id"] for c in json.loads(reply.text or "")["claim_checks"]] == ["C1", "C2"]
    body = openai_server.requests[0]
    assert body["model"] == "local-model"
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 7, 300)
    assert "response_format" not in body  # no schema asked: plain
    assert reply.finish_reason == "stop"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens > 0
    assert reply.latency_ms > 0
    assert reply.raw is not None and reply.raw["choices"][0]["message"]["content"] == reply.text
    assert openai_server.authorizations == [f"Bearer {SECRET_KEY}"]


async def test_429_with_retry_after_is_retried_after_the_wait_the_server_asked_for(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.script(Fault(kind="rate_limit", retry_after="1"))
    async with model_for(openai_server, backoff_base=0.01) as model:
        started = time.perf_counter()
        reply = await model.generate(request())
        waited = time.perf_counter() - started
    assert reply.error is None and reply.text
    assert reply.attempts == 2 and openai_server.request_count == 2
    assert waited >= 1.0  # own backoff would have been ~0.01 s


async def test_retry_after_is_capped_by_max_retry_after(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="rate_limit", retry_after="30"))
    async with model_for(openai_server, max_retry_after=0.5) as model:
        started = time.perf_counter()
        reply = await model.generate(request())
        elapsed = time.perf_counter() - started
    assert reply.error is None and reply.attempts == 2
    assert_within(elapsed, bound=0.5, broken=30.0)  # the cap, not the 30 s the server asked for


async def test_rate_limited_on_every_attempt_is_recorded_as_rate_limited(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(*[Fault(kind="rate_limit", retry_after="0")] * 3)
    async with model_for(openai_server, max_attempts=3) as model:
        reply = await model.generate(request())
    assert (reply.error, reply.attempts, reply.text) == ("rate_limited", 3, None)
    assert "429" in (reply.error_detail or "")


async def test_500_is_retried_and_recovers(openai_server: LocalOpenAIServer) -> None:
    openai_server.script("server_error")
    async with model_for(openai_server) as model:
        reply = await model.generate(request())
    assert reply.error is None and reply.text and reply.attempts == 2
    assert openai_server.faults_applied == ["server_error"]


async def test_5xx_on_every_attempt_ends_as_server_error_after_max_attempts(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(*[Fault(kind="server_error", status=503)] * 4)
    async with model_for(openai_server, max_attempts=4) as model:
        reply = await model.generate(request())
    assert (reply.error, reply.attempts) == ("server_error", 4)
    assert openai_server.request_count == 4


async def test_a_reply_slower_than_the_timeout_is_retried_then_recorded_as_timeout(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.script(*[Fault(kind="slow", delay_s=2.0)] * 2)
    async with model_for(openai_server, max_attempts=2, timeout=0.2) as model:
        reply = await model.generate(request())
    # a 2 s reply would have succeeded: "timeout" proves each attempt was cut at 0.2 s
    assert (reply.error, reply.attempts, reply.text) == ("timeout", 2, None)
    assert openai_server.request_count == 2


async def test_a_slow_reply_then_a_fast_one_recovers(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="slow", delay_s=2.0))
    async with model_for(openai_server, timeout=0.2) as model:
        reply = await model.generate(request())
    assert reply.error is None and reply.text and reply.attempts == 2


async def test_the_request_timeout_overrides_the_model_timeout(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="slow", delay_s=2.0))
    async with model_for(openai_server, timeout=30, max_attempts=1) as model:
        reply = await model.generate(request(timeout=0.2))
    assert reply.error == "timeout"


async def test_a_malformed_json_body_is_retried_and_recorded_when_it_persists(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.script("malformed")
    async with model_for(openai_server, max_attempts=2) as model:
        recovered = await model.generate(request())
        openai_server.script("malformed", "malformed")
        failed = await model.generate(request())
    assert recovered.error is None and recovered.attempts == 2
    assert (failed.error, failed.attempts, failed.text) == ("bad_response", 2, None)
    assert "not JSON" in (failed.error_detail or "")


async def test_a_dropped_connection_is_retried_and_recorded_as_connection(openai_server: LocalOpenAIServer) -> None:
    openai_server.script("drop")
    async with model_for(openai_server, max_attempts=2) as model:
        recovered = await model.generate(request())
        openai_server.script("drop", "drop")
        failed = await model.generate(request())
    assert recovered.error is None and recovered.attempts == 2
    assert (failed.error, failed.attempts) == ("connection", 2)


async def test_nothing_listening_is_a_connection_error_not_a_crash() -> None:
    server = LocalOpenAIServer().start()
    url = server.base_url
    server.stop()  # the port is closed now
    async with OpenAIChatModel("m", base_url=url, max_attempts=2, backoff_base=0.01) as model:
        reply = await model.generate(request())
    assert reply.error == "connection" and reply.attempts == 2


@pytest.mark.parametrize(
    ("fault", "text", "finish", "refusal"),
    [
        ("length", None, "length", None),
        ("empty", "", "stop", None),
        ("refusal", None, "stop", REFUSAL_TEXT),
        ("not_json_content", "The answer looks fine to me.", "stop", None),
    ],
)
async def test_a_reply_that_came_is_returned_as_is_and_never_retried(
    openai_server: LocalOpenAIServer, fault: str, text: str | None, finish: str, refusal: str | None
) -> None:
    openai_server.script(fault)
    async with model_for(openai_server) as model:
        reply = await model.generate(request(claims_message("C1")))
    assert reply.error is None and reply.attempts == 1 and openai_server.request_count == 1
    assert (reply.finish_reason, reply.refusal) == (finish, refusal)
    if fault == "length":
        full = json.dumps(json.loads(openai_server.responder(openai_server.requests[0])))
        assert reply.text and full.startswith(reply.text) and len(reply.text) < len(full)
    else:
        assert reply.text == text


async def test_a_client_error_is_not_retried(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="server_error", status=401))
    async with model_for(openai_server) as model:
        reply = await model.generate(request())
    assert (reply.error, reply.attempts) == ("client_error", 1)
    assert "401" in (reply.error_detail or "")


async def test_the_key_never_appears_in_describe_responses_or_logs(
    openai_server: LocalOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    openai_server.script("server_error", Fault(kind="rate_limit", retry_after="0"), "drop", "malformed")
    async with model_for(openai_server, max_attempts=5) as model:
        replies = [await model.generate(request(claims_message("C1"), schema=SCHEMA))]
        openai_server.script(*["server_error"] * 5)
        replies.append(await model.generate(request()))
        described = json.dumps(model.describe())
    assert replies[0].error is None and replies[1].error == "server_error"
    assert all(a == f"Bearer {SECRET_KEY}" for a in openai_server.authorizations)  # it was sent...
    recorded = [described, caplog.text, repr(model.settings), *(r.model_dump_json() for r in replies)]
    assert all(SECRET_KEY not in text for text in recorded)  # ...and recorded nowhere
    assert "local-model" in described and "127.0.0.1" in described


def test_describe_drops_the_query_from_the_base_url_and_user_info_is_refused() -> None:
    model = OpenAIChatModel("m", base_url="https://example.invalid:8443/v1/?tok=qtok123", api_key="sk-x-123")
    described = json.dumps(model.describe())
    assert "qtok123" not in described and "sk-x-123" not in described
    assert model.describe()["base_url"] == "https://example.invalid:8443/v1"
    assert public_url("http://127.0.0.1:9/v1/") == "http://127.0.0.1:9/v1"
    assert public_url("https://user:s3cretpw@example.invalid:8443/v1") == "https://example.invalid:8443/v1"
    for url in ("https://user:s3cretpw@example.invalid/v1", "https://s3cretpw@example.invalid/v1"):
        with pytest.raises(BaseURLError) as info:
            OpenAIChatModel("m", base_url=url)
        assert "s3cretpw" not in str(info.value) and "carries credentials" in str(info.value)


def test_base_url_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-0000")
    model = OpenAIChatModel("m")
    assert model.base_url == "http://127.0.0.1:9999/v1"
    assert "sk-env-key-0000" not in json.dumps(model.describe())


def test_unknown_client_settings_are_errors() -> None:
    with pytest.raises(ValueError, match="max_atempts"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", max_atempts=3)
    assert (
        OpenAIChatModel("m", base_url="http://x/v1", settings=OpenAISettings(max_attempts=7)).settings.max_attempts == 7
    )


async def test_model_settings_max_tokens_and_extra_body_reach_the_request(openai_server: LocalOpenAIServer) -> None:
    async with model_for(openai_server, max_tokens=64, extra_body={"top_k": 20, "cache_prompt": True}) as model:
        await model.generate(request(max_tokens=2048, extra_body={"top_k": 5}))
    body = openai_server.requests[0]
    assert body["max_tokens"] == 64  # the model's own limit wins over the prompt's
    assert (body["top_k"], body["cache_prompt"]) == (5, True)  # the request's extra fields win on a clash


async def test_max_completion_tokens_can_replace_max_tokens(openai_server: LocalOpenAIServer) -> None:
    async with model_for(openai_server, token_param="max_completion_tokens") as model:
        await model.generate(request(max_tokens=99))
    body = openai_server.requests[0]
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body


async def test_concurrent_calls_each_get_their_own_reply(openai_server: LocalOpenAIServer) -> None:
    import asyncio

    openai_server.latency_ms = 100
    async with model_for(openai_server) as model:
        replies = await asyncio.gather(*(model.generate(request(claims_message(f"C{i}"))) for i in range(20)))
    assert [json.loads(r.text or "")["claim_checks"][0]["claim_id"] for r in replies] == [f"C{i}" for i in range(20)]
    assert openai_server.max_in_flight >= 2  # the server held several at once: concurrent, not one after another


async def test_an_unusable_aiohttp_adapter_falls_back_to_httpx(
    openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """openai without its aiohttp extra ships a placeholder class that raises when built: use httpx instead."""

    class Placeholder:
        def __init__(self, **_: object) -> None:
            raise RuntimeError("To use the aiohttp client you must have installed the package with the `aiohttp` extra")

    monkeypatch.setattr(openai_model.openai, "DefaultAioHttpClient", Placeholder)
    openai_model._aiohttp_usable.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            async with OpenAIChatModel("m", base_url=openai_server.base_url) as model:
                assert model.transport == "httpx"
                assert (await model.generate(request())).error is None
        assert any("aiohttp transport is not usable" in r.getMessage() for r in caplog.records)
    finally:
        openai_model._aiohttp_usable.cache_clear()


def _timeout_chain(cause: BaseException) -> openai.APITimeoutError:
    """openai's timeout error as the aiohttp transport raises it: APITimeoutError <- httpx ConnectTimeout <- cause."""
    http = http_library()
    try:
        try:
            try:
                raise cause
            except BaseException as exc:
                raise http.ConnectTimeout(str(exc)) from exc
        except BaseException as exc:
            raise openai.APITimeoutError(request=http.Request("POST", "http://127.0.0.1:9/v1")) from exc
    except openai.APITimeoutError as exc:
        return exc


def _connector_error(os_error: OSError) -> aiohttp.ClientConnectorError:
    key = SimpleNamespace(host="127.0.0.1", port=9, ssl=None, is_ssl=False)
    return aiohttp.ClientConnectorError(key, os_error)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cause", "dropped"),
    [
        (aiohttp.ServerDisconnectedError(), True),  # the server closed the socket: a lost connection
        (_connector_error(ConnectionRefusedError(errno.ECONNREFUSED, "refused")), True),
        (_connector_error(TimeoutError(errno.ETIMEDOUT, "timed out")), False),  # the connect timed out
        (aiohttp.ConnectionTimeoutError(), False),
        (aiohttp.SocketTimeoutError(), False),  # no reply within the read timeout
        (ValueError("something else"), False),
    ],
)
def test_a_timeout_error_is_told_from_a_lost_connection_by_its_cause(cause: BaseException, dropped: bool) -> None:
    assert openai_model._dropped_not_timed_out(_timeout_chain(cause)) is dropped
