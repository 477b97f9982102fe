"""The kit's input checks: what the spec says the verifier must be given, found in the SUT's model request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.kit.requests import input_problems, request_for, scripted_reply
from harness.llm.openai_model import OpenAIChatModel
from harness.run.execute import run_case
from harness.system.prompts import load_prompt
from harness.system.verifiers.llm import LLMVerifier
from tests.kit.helpers import ROOT

CASE = next(c for c in load_cases([ROOT / "cases" / "policy"]) if c.id == "pol-gkinput-fail-plus-three-warnings")


def model_request(case=CASE) -> dict[str, Any]:
    """The request the bundled system really sends, recorded by a local OpenAI-compatible server."""
    with LocalOpenAIServer(lambda _b: scripted_reply(case)) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, api_key="k", max_attempts=1)
        verifier = LLMVerifier(model, load_prompt("baseline"))

        async def go() -> None:
            try:
                await run_case(case, verifier)
            finally:
                await verifier.aclose()

        asyncio.run(go())
        return server.requests[-1]


def test_the_bundled_systems_request_meets_every_input_requirement() -> None:
    assert input_problems(CASE, [model_request()]) == []


def edit(body: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    text = json.dumps(body)
    assert old in text
    return json.loads(text.replace(old, new))


def test_a_missing_gatekeeper_rule_claim_or_trace_ref_is_named() -> None:
    body = model_request()
    assert any(
        "failed rule schema.executor_v2" in p for p in input_problems(CASE, [edit(body, "schema.executor_v2", "x")])
    )
    assert any(
        "warning rule evidence.trace_ref" in p for p in input_problems(CASE, [edit(body, "evidence.trace_ref", "x")])
    )
    assert any("'failed_rules'" in p for p in input_problems(CASE, [edit(body, "failed_rules", "fr")]))
    assert any(
        "trace ref T2" in p for p in input_problems(CASE, [edit(body, 'trace_ref=\\"T2\\"', 'trace_ref=\\"Tx\\"')])
    )
    claim = CASE.executor.structured_output["claims"][0]  # type: ignore[index]
    stmt = json.dumps(claim["statement"])[1:-1]
    assert any("statement of claim" in p for p in input_problems(CASE, [edit(body, stmt[:30], "zzz")]))


def test_no_model_call_is_a_problem() -> None:
    assert input_problems(CASE, [])[0].startswith("input: the SUT never called the model endpoint")


def test_the_request_carries_everything_in_the_body() -> None:
    body = request_for(CASE, "http://127.0.0.1:1/v1").model_dump(mode="json")
    assert set(body) == {"protocol", "session", "executor", "verifier", "settings"}
    assert body["executor"]["structured_output_raw"] == CASE.executor.emission().structured_output_raw
    assert body["session"]["self_evaluation"] == CASE.session.self_evaluation


def test_a_missing_result_excerpt_is_named() -> None:
    body = model_request()
    head = CASE.session.tool_invocations[0].result.strip().splitlines()[0][:40]
    stripped = edit(body, json.dumps(head)[1:-1], "elided")
    assert any("result excerpt of trace ref T1" in p for p in input_problems(CASE, [stripped]))
