"""Deadlines (issue 17) over real HTTP against the local server, on both transports: `timeout` bounds a whole
attempt (body included), the Retry-After cap is a setting, and no request waits for another to learn the structured mode."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.llm.openai_model import OpenAISettings, worst_case_seconds
from tests.llm.helpers import SCHEMA, model_for, request
from tests.timing import assert_within

pytestmark = pytest.mark.usefixtures("transport")  # every test here runs on both transports


async def test_a_trickled_body_is_cut_at_the_attempt_timeout(openai_server: LocalOpenAIServer) -> None:
    """Headers at once, then a byte every 0.5 s: every read comes in time, but the attempt must not."""
    openai_server.script(*[Fault(kind="trickle", delay_s=0.5)] * 2)
    async with model_for(openai_server, timeout=1.0, max_attempts=2) as model:
        started = time.monotonic()
        reply = await model.generate(request())
        elapsed = time.monotonic() - started
    assert reply.error == "timeout" and reply.attempts == 2, reply
    assert "no whole reply within 1 s" in (reply.error_detail or "")
    assert openai_server.faults_applied == ["trickle", "trickle"] and openai_server.pending_faults == 0
    assert elapsed >= 2.0, elapsed  # two attempts of 1 s each ran to their deadline
    assert_within(elapsed, bound=2.0, broken=2 * 40.0)  # uncut, a trickled body takes ~40 s per attempt


async def test_a_body_that_never_ends_does_not_hang(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="trickle", delay_s=30.0))
    async with model_for(openai_server, timeout=0.5, max_attempts=1) as model:
        reply = await asyncio.wait_for(model.generate(request()), timeout=10)
    assert reply.error == "timeout"


async def test_after_a_trickle_the_next_attempt_gets_the_reply(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="trickle", delay_s=0.5))
    async with model_for(openai_server, timeout=1.0, max_attempts=2) as model:
        reply = await model.generate(request())
    assert reply.error is None and reply.attempts == 2 and reply.text


async def test_the_retry_after_cap_is_a_setting(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="rate_limit", retry_after="86400"))
    async with model_for(openai_server, max_retry_after=0.5, max_attempts=2) as model:
        started = time.monotonic()
        reply = await model.generate(request())
        elapsed = time.monotonic() - started
    assert reply.error is None and reply.attempts == 2
    assert elapsed >= 0.5, elapsed  # the capped wait was kept
    assert_within(elapsed, bound=0.5, broken=86400.0)  # not the day the server asked for


async def test_first_calls_against_a_failing_server_run_side_by_side_within_one_requests_bound(
    openai_server: LocalOpenAIServer,
) -> None:
    """Before any request succeeded, no request waits for another to learn the structured mode: while every
    attempt times out, the first calls go side by side and all end within one request's bound."""
    requests = 8
    settings = {"timeout": 0.5, "max_attempts": 3, "backoff_base": 0.0, "backoff_max": 0.0, "max_retry_after": 0.0}
    openai_server.script(*[Fault(kind="slow", delay_s=5.0)] * (requests * settings["max_attempts"]))
    async with model_for(openai_server, **settings) as model:
        started = time.monotonic()
        replies = await asyncio.gather(*[model.generate(request(schema=SCHEMA)) for _ in range(requests)])
        elapsed = time.monotonic() - started
    assert [r.error for r in replies] == ["timeout"] * requests
    assert openai_server.max_in_flight == requests
    bound = worst_case_seconds(OpenAISettings(**settings))  # every request within one request's bound
    one_request = settings["max_attempts"] * settings["timeout"]
    assert_within(elapsed, bound=bound, broken=requests * one_request)  # broken: one at a time


def test_worst_case_seconds_adds_every_attempt_and_the_longest_wait() -> None:
    settings = OpenAISettings(timeout=2.0, max_attempts=3, max_retry_after=5.0, backoff_max=1.0)
    assert worst_case_seconds(settings) == 3 * 2.0 + 2 * 5.0
    settings = OpenAISettings(timeout=1.0, max_attempts=4, max_retry_after=0.0, backoff_base=1.0, backoff_max=3.0)
    assert worst_case_seconds(settings) == 4 * 1.0 + (1.0 + 2.0 + 3.0)
