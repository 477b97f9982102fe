"""The kit's SUT client: the deadline held exactly, answers read as strict JSON, messages in JSON terms."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest
from aiohttp import web

from harness.kit.sut import answer_deadline, fetch_info, info_problems, post_verify
from tests.kit.helpers import ThreadedApp


class ScriptedSut(ThreadedApp):
    """Answers /verify with `body` after `delay_s`, and /info with `info` (test only)."""

    def __init__(self, body: str = '{"self_evaluation": {}}', delay_s: float = 0.0, info: object = None) -> None:
        super().__init__()
        self.body, self.delay_s, self.info_answer = body, delay_s, info

    async def verify(self, _request: web.Request) -> web.Response:
        await asyncio.sleep(self.delay_s)
        return web.Response(body=self.body.encode(), content_type="application/json")

    async def info(self, _request: web.Request) -> web.Response:
        return web.Response(body=json.dumps(self.info_answer).encode(), content_type="application/json")

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/verify", self.verify)
        app.router.add_get("/info", self.info)


def verify_against(sut: ScriptedSut, timeout_s: float = 1.0):
    async def go():
        async with aiohttp.ClientSession() as session:
            return await post_verify(session, url, {"x": 1}, timeout_s)

    with sut as url:
        return asyncio.run(go())


TIMEOUT_S = 0.5
"""A small configured deadline: the kit waits answer_deadline(TIMEOUT_S) (1.5 s) and no longer."""


def test_an_answer_just_past_the_deadline_is_refused() -> None:
    """Answered a tenth past the deadline (33.05 s of a 33 s limit, scaled down): a timeout, not an answer."""
    late = answer_deadline(TIMEOUT_S) * 1.1
    reply = verify_against(ScriptedSut(delay_s=late), TIMEOUT_S)
    assert reply.error is not None and reply.error.startswith("timeout"), reply
    assert reply.elapsed_ms / 1000 <= late  # cancelled at the deadline, not waited for


def test_an_answer_well_within_the_deadline_is_read() -> None:
    reply = verify_against(ScriptedSut(delay_s=answer_deadline(TIMEOUT_S) * 0.3), TIMEOUT_S)
    assert reply.error is None and reply.self_evaluation == {}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{"self_evaluation": "{\\"verifier_evaluation\\": {}}"}', '"self_evaluation" is a JSON string, not an object'),
        ('{"self_evaluation": null}', '"self_evaluation" is null, not an object'),
        ('{"evaluation": {}}', 'no "self_evaluation" key'),
        ('{"self_evaluation": {"a": 1, "a": 2}}', 'repeated key "a"'),
        ('{"self_evaluation": {"a": NaN}}', "NaN is not JSON"),
        ("<html>", 'not JSON: "<html>"'),
    ],
)
def test_a_wrong_answer_is_said_in_json_terms(body: str, says: str) -> None:
    reply = verify_against(ScriptedSut(body=body))
    assert reply.self_evaluation is None and says in (reply.error or ""), reply.error


def test_info_problems_are_said_in_json_with_the_fix() -> None:
    problems = info_problems({"name": "jsut", "version": 2, "protocol": "sut_protocol_v2"})
    assert problems == [
        'GET /info: "version" is 2, not a non-empty string (write it as a JSON string: "2")',
        'GET /info: "protocol" is "sut_protocol_v2"; the kit speaks "sut_protocol_v1"',
    ]
    assert info_problems({"version": None, "protocol": "sut_protocol_v1"}) == [
        'GET /info: "name" is absent, not a non-empty string',
        'GET /info: "version" is null, not a non-empty string',
    ]


def test_a_numeric_info_version_is_a_protocol_problem_not_a_crash() -> None:
    async def go(url: str):
        async with aiohttp.ClientSession() as session:
            return await fetch_info(session, url, 5.0)

    with ScriptedSut(info={"name": "jsut", "version": 1.2, "protocol": "sut_protocol_v1"}) as url:
        info, problems = asyncio.run(go(url))
    assert info.name == "jsut" and info.version == "1.2"
    assert problems == ['GET /info: "version" is 1.2, not a non-empty string (write it as a JSON string: "1.2")']


@pytest.mark.slow
def test_a_deadline_over_five_seconds_is_not_rounded_up_to_a_whole_second() -> None:
    """HTTP clients round a timeout of 5 s or more up to the next whole second of their clock; the protocol's deadline
    is exact. Started just after a whole second of the monotonic clock, the rounded deadline would fall almost a
    second late, so an answer a twentieth of the deadline late would have passed."""
    timeout_s = 5.0  # the kit waits answer_deadline(5.0) == 6.0 s
    late = answer_deadline(timeout_s) * 1.05
    while time.monotonic() % 1.0 > 0.05:  # start right after a whole second: rounding would add ~0.95 s
        time.sleep(0.01)
    reply = verify_against(ScriptedSut(delay_s=late), timeout_s)
    assert reply.error is not None and reply.error.startswith("timeout"), reply


def test_numbers_in_the_answer_are_read_by_value_exactly() -> None:
    """`9007199254740993e0` is 2^53 + 1 written with an exponent: read by value it is that integer, not the
    nearest double (a sibling sent as 9007199254740993 is then unchanged, however the SUT spells it)."""
    reply = verify_against(ScriptedSut(body='{"self_evaluation": {"big": 9007199254740993e0, "one": 1.0, "r": 0.1}}'))
    assert reply.self_evaluation == {"big": 9007199254740993, "one": 1, "r": 0.1}
    assert isinstance(reply.self_evaluation["big"], int)
