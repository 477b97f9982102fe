"""The kit's input checks: what the spec says the verifier must be given, found in the SUT's model request."""

from __future__ import annotations

import asyncio
import html
import json
from typing import Any

import pytest

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
    assert any('"failed_rules"' in p for p in input_problems(CASE, [edit(body, "failed_rules", "fr")]))
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


# --- the request read as data, in every layout a SUT may choose --------------------------------------------


def gatekeeper_of(case=CASE, status: str | None = None) -> dict[str, Any]:
    gk = case.expected.gatekeeper
    return {
        "status": status or gk.status,
        "failed_rules": sorted(gk.failed_rules),
        "errors": [{"rule": r, "message": "fails"} for r in gk.failed_rules],
        "warnings": [{"rule": r, "message": "warns"} for r in gk.warnings or []],
    }


def payload_of(case=CASE, status: str | None = None) -> dict[str, Any]:
    return {
        "gatekeeper_result": gatekeeper_of(case, status),
        "claims": [{"claim_id": c.claim_id, "statement": c.statement} for c in case.executor_claims],
        "tool_trace_summary": [e.model_dump(mode="json") for e in case.trace(2000)],
    }


def pretty(case=CASE, status: str | None = None) -> str:
    """As Jackson's INDENT_OUTPUT writes it: `"key" : value`, two-space indent."""
    return json.dumps(payload_of(case, status), indent=2, separators=(",", " : "), ensure_ascii=False)


def compact(case=CASE, status: str | None = None) -> str:
    return json.dumps(payload_of(case, status), separators=(",", ":"))


def xml(case=CASE, status: str | None = None) -> str:
    """Every part as XML elements and attributes, no JSON at all."""
    gk = gatekeeper_of(case, status)
    rules = "".join(f"<rule>{r}</rule>" for r in gk["failed_rules"])
    issues = "".join(f'<issue rule="{i["rule"]}"/>' for i in gk["warnings"])
    claims = "".join(f'<claim claim_id="{c.claim_id}">{html.escape(c.statement)}</claim>' for c in case.executor_claims)
    trace = "".join(
        f'<tool_result trace_ref="{e.trace_ref}">{html.escape(e.result_excerpt)}</tool_result>'
        for e in case.trace(2000)
    )
    return (
        f"<input><gatekeeper_result><status>{gk['status']}</status><failed_rules>{rules}</failed_rules>"
        f"<errors>{rules}</errors><warnings>{issues}</warnings></gatekeeper_result>{claims}{trace}</input>"
    )


def prose(case=CASE, status: str | None = None) -> str:
    """JSON embedded in sentences, each part on its own."""
    parts = payload_of(case, status)
    return (
        f"The gatekeeper ran first and said {json.dumps(parts['gatekeeper_result'])}, so weigh that.\n"
        f"Check these claims: {json.dumps(parts['claims'])} against the trace "
        f"{json.dumps(parts['tool_trace_summary'])}. Answer in JSON."
    )


LAYOUTS = {"pretty": pretty, "compact": compact, "xml": xml, "prose": prose}


def chat(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": "Verify."}, {"role": "user", "content": text}]}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize(
    "case_id", [CASE.id, "pol-gkinput-status-pass-empty-lists", "pol-gkinput-warn-failed-invocation"]
)
def test_every_layout_carries_the_inputs(layout: str, case_id: str) -> None:
    case = next(c for c in load_cases([ROOT / "cases" / "policy"]) if c.id == case_id)
    assert input_problems(case, [chat(LAYOUTS[layout](case))]) == []


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_wrong_gatekeeper_status_is_named_in_every_layout(layout: str) -> None:
    problems = input_problems(CASE, [chat(LAYOUTS[layout](CASE, status="pass"))])
    assert any('"fail"' in p and "status" in p for p in problems), problems


def test_a_pretty_printed_prompt_inside_a_json_string_is_read() -> None:
    """JSON inside JSON: the SUT sends the pretty-printed payload as one JSON string value of its prompt."""
    text = json.dumps({"instructions": "verify", "input": pretty()})
    assert input_problems(CASE, [chat(text)]) == []
    assert input_problems(CASE, [chat(json.dumps({"input": pretty(status="warn")}))]) != []


def test_a_rule_missing_from_the_gatekeeper_object_is_named_though_elsewhere_in_the_text() -> None:
    """Read as data: a failed rule id quoted in prose does not stand in for the gatekeeper's `failed_rules`."""
    payload = payload_of()
    rule = payload["gatekeeper_result"]["failed_rules"].pop()
    text = f"Rules you may see: {rule}.\n" + json.dumps(payload, indent=2)
    assert any(f"failed rule {rule}" in p for p in input_problems(CASE, [chat(text)]))
