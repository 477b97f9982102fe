"""The three rules an independent case set found the system reading against the spec (issue 15, item 6).

1. Mistyped invocation ids still name ids: `evidence.invocation_ref` checks them, and such a binding
   never resolves (INTERPRETATION §3, §5 step 3).
2. A contract object nested inside another JSON value is not the reply (§5 step 2).
3. The reply is found in prose however much JSON text comes before it, in linear time.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness.system.gatekeeper import GatekeeperInput, binding_invocation_ids, claim_bindings, run_gatekeeper
from harness.system.models import Derivability, Verdict, VerifierCall
from harness.system.parser import parse_structured_output
from harness.system.policy import binding_resolves, structured_claims
from harness.system.reply import json_objects, parse_verifier_reply
from harness.system.trace import build_trace_summary
from tests.system.builders import INVOCATIONS, claim, output, reply
from tests.system.test_policy import evaluate

ROWS = {i.id: i for i in INVOCATIONS}
TRACE = build_trace_summary(INVOCATIONS)


def gate(doc: dict[str, Any]):
    parsed = parse_structured_output(json.dumps(doc))
    return run_gatekeeper(GatekeeperInput(parsed=parsed, invocations=ROWS, trace=TRACE))


# --- 1. invocation ids of the wrong type ------------------------------------------------------------

BARE_FABRICATED = {"trace_ref": "T1", "tool_name": "query_prometheus_alerts", "source_invocation_ids": "inv-999"}
BARE_REAL = {"trace_ref": "T1", "tool_name": "query_prometheus_alerts", "source_invocation_ids": "inv-1"}


@pytest.mark.parametrize(
    ("bindings", "ids"),
    [
        ([BARE_FABRICATED], ["inv-999"]),
        (BARE_FABRICATED, ["inv-999"]),  # a single object instead of a list
        ({**BARE_FABRICATED, "source_invocation_ids": ["inv-999"]}, ["inv-999"]),
        ([{**BARE_FABRICATED, "source_invocation_ids": 101}], ["<not a string: 101>"]),
    ],
)
def test_mistyped_ids_fail_schema_and_are_still_checked(bindings: Any, ids: list[str]) -> None:
    result = gate(output(claim(bindings=bindings)))
    assert result.failed_rules == ["evidence.invocation_ref", "schema.executor_v2"]
    assert [e.message.split(" is not")[0] for e in result.errors if e.rule == "evidence.invocation_ref"] == ids


def test_policy_and_gatekeeper_read_ids_through_one_reader() -> None:
    doc = output(claim(bindings=BARE_FABRICATED))
    parsed = parse_structured_output(json.dumps(doc))
    (read,) = structured_claims(parsed)[0].evidence_bindings
    ((_, raw, typed),) = claim_bindings(doc["claims"][0])
    assert read.source_invocation_ids == binding_invocation_ids(raw) == ["inv-999"]
    assert typed is False and read.well_typed is False


def test_a_mistyped_binding_never_resolves_even_when_its_id_exists() -> None:
    doc = output(claim(bindings=[BARE_REAL]))
    assert gate(doc).failed_rules == ["schema.executor_v2"]  # inv-1 is a real row under that tool
    (read,) = structured_claims(parse_structured_output(json.dumps(doc)))[0].evidence_bindings
    assert not binding_resolves(read, ROWS, TRACE)
    assert binding_resolves(read.model_copy(update={"well_typed": True}), ROWS, TRACE)
    ev = evaluate(doc, reply("PASS"))
    assert ev.claim_checks[0].verification == Derivability.UNSUPPORTED
    assert "sanitise.unresolved_direct" in [a.step for a in ev.adjustments]


@pytest.mark.parametrize("bindings", [[BARE_FABRICATED], BARE_FABRICATED])
def test_a_fabricated_id_given_mistyped_downgrades_a_model_pass_to_reject(bindings: Any) -> None:
    ev = evaluate(output(claim(bindings=bindings)), reply("PASS"), guard=False)
    assert ev.verdict == Verdict.REJECT
    assert "well_typed" not in json.dumps(ev.model_dump(mode="json"))
    assert ev.claim_checks[0].evidence_refs[0].source_invocation_ids == ["inv-999"]


# --- 2. replies nested inside other JSON ------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"result": reply()}),
        json.dumps([reply()]),
        "Verdict below.\n```json\n" + json.dumps({"answer": reply()}) + "\n```",
        "Here it is: " + json.dumps({"answer": reply()}) + " done.",
        "Here it is: " + json.dumps([1, reply()]) + " done.",
    ],
)
def test_a_contract_object_nested_in_another_value_is_not_the_reply(raw: str) -> None:
    got, status = parse_verifier_reply(VerifierCall(raw_reply=raw, model="m"))
    assert got is None and status.status == "invalid"
    assert evaluate(output(claim()), raw=raw).verdict == Verdict.LOW_CONFID


def test_a_top_level_reply_after_other_json_is_still_found() -> None:
    raw = 'The executor said {"claims": []} and the trace [1, 2]; my answer: ' + json.dumps(reply())
    got, status = parse_verifier_reply(VerifierCall(raw_reply=raw, model="m"))
    assert status.status == "valid" and got is not None and got.verdict == Verdict.PASS


# --- 3. no limit on how far to look, and no quadratic scan -------------------------------------------


@pytest.mark.parametrize(
    "before",
    [
        "{" * 300_000,  # braces that cannot start a value
        '{"a": 1} ' * 40_000,  # whole JSON values, each skipped over once
        '{"note' + "x{" * 150_000 + '" ',  # a long string full of braces
        '{"a":1,"a":1} ' * 30_000,  # strictly invalid objects (repeated keys)
        '"{"a":"' * 50_000,  # quotes and braces that never make JSON
    ],
    ids=["open-braces", "many-objects", "braces-in-a-string", "repeated-keys", "quote-soup"],
)
def test_the_reply_is_found_after_any_amount_of_text_in_linear_time(before: str) -> None:
    reply_text = json.dumps(reply())

    def seconds(n: int) -> float:
        text = before[: len(before) * n // 4] + "\n" + reply_text
        found, cpu = scan_cpu_seconds(text)
        assert [o for o in found if "verdict" in o] == [reply()]
        return cpu

    small, large = seconds(1), seconds(4)
    assert large < 12 * small + 0.05  # 4x the text: a quadratic scan would take ~16x


def test_more_than_256_brace_positions_before_the_reply() -> None:
    raw = "notes: " + " ".join(json.dumps({"k": i}) for i in range(1000)) + " " + json.dumps(reply())
    got, status = parse_verifier_reply(VerifierCall(raw_reply=raw, model="m"))
    assert status.status == "valid" and got is not None


def test_a_reply_that_runs_past_the_first_window_is_decoded_whole() -> None:
    long = reply()
    long["rationale"] = "r" * 5000 + " true " + "{[" * 100
    raw = "prose " + json.dumps(long)
    got, _ = parse_verifier_reply(VerifierCall(raw_reply=raw, model="m"))
    assert got is not None and got.rationale == long["rationale"]


def test_unclosed_nesting_too_deep_to_decode_is_skipped_not_rescanned() -> None:
    def seconds(depth: int) -> float:
        return scan_cpu_seconds("[1," * depth + " " + json.dumps(reply()))[1]

    small, large = seconds(25_000), seconds(100_000)
    assert large < 12 * small + 0.05  # 4x the nesting: rescanning from every bracket would take ~16x


def scan_cpu_seconds(text: str) -> tuple[list[object], float]:
    """Every JSON value `json_objects` finds in `text`, and the CPU time of this thread it took: other processes
    on a busy machine do not count, so a ratio of two such times measures the scan, not the machine's load."""
    start = time.thread_time()
    found = list(json_objects(text))
    return found, time.thread_time() - start
