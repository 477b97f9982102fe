"""The rules that tie a persisted evaluation to the model's reply: each holds for the bundled system on every
policy case, and each catches the mistake it is for."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.kit.requests import scripted_reply
from harness.kit.sut import info_problems
from harness.run.execute import run_case, scripted_verifier_for
from harness.score.reply_checks import (
    adjustment_problems,
    changed_checks,
    filled_ref_problems,
    groundedness_problems,
    model_ref_problems,
    model_reply,
    reply_problems,
    verifier_block_problems,
)
from harness.system.store import EVALUATION_KEY
from tests.kit.helpers import ROOT

POLICY = [c for c in load_cases([ROOT / "cases" / "policy"]) if c.kind == "policy"]


def persisted(case: Case) -> dict[str, Any]:
    """The bundled system's persisted evaluation, in process. Its scripted verifier has no prompt, so no prompt
    version: over HTTP the SUT's real model client names one (tests/kit/test_certify.py certifies that)."""
    _evaluation, self_evaluation = asyncio.run(run_case(case, scripted_verifier_for(case)))
    stored = copy.deepcopy(dict(self_evaluation[EVALUATION_KEY]))  # type: ignore[arg-type]
    stored["verifier"]["prompt_version"] = stored["verifier"]["prompt_version"] or "scripted"
    return stored


def valid(case: Case) -> bool:
    return case.parsed_output.parse_status.status == "valid"


def problems(case: Case, stored: dict[str, Any]) -> list[str]:
    trace = case.trace(2000)
    return reply_problems(stored, model_reply(scripted_reply(case)), case.executor_claims, valid(case), trace)


def first(predicate: Any) -> tuple[Case, dict[str, Any]]:
    for case in POLICY:
        stored = persisted(case)
        if predicate(case, stored):
            return case, stored
    raise AssertionError("no policy case fits")


def test_the_bundled_system_keeps_every_rule_on_every_policy_case() -> None:
    bad = {c.id: p for c in POLICY if (p := problems(c, persisted(c)))}
    assert bad == {}


def test_a_dropped_or_retyped_groundedness_score_is_caught() -> None:
    case, stored = first(lambda c, s: model_reply(scripted_reply(c)) is not None)
    reply = model_reply(scripted_reply(case))
    assert groundedness_problems(stored, reply) == []
    for wrong in (None, True, str(stored["groundedness_score"]), 0.123456):
        if wrong == reply.groundedness_score:
            continue
        assert groundedness_problems({**stored, "groundedness_score": wrong}, reply), wrong
    assert groundedness_problems({**stored, "groundedness_score": float(f"{reply.groundedness_score}e0")}, reply) == []


def test_a_sanitised_check_without_its_adjustment_is_caught() -> None:
    def sanitised(case: Case, stored: dict[str, Any]) -> bool:
        reply = model_reply(scripted_reply(case))
        return reply is not None and valid(case) and changed_checks(stored, reply, case.executor_claims) > 0

    case, stored = first(sanitised)
    reply = model_reply(scripted_reply(case))
    assert adjustment_problems(stored, reply, case.executor_claims, True) == []
    fewer = {**stored, "adjustments": [a for a in stored["adjustments"] if not a.get("claim_id")]}
    assert adjustment_problems(fewer, reply, case.executor_claims, True)
    # shaped any way, one per change with a reason is enough
    reshaped = {**stored, "adjustments": [{"reason": "r", "kind": 1} for _ in stored["adjustments"]]}
    assert adjustment_problems(reshaped, reply, case.executor_claims, True) == []
    no_reason = {**stored, "adjustments": [{"why": "r"} for _ in stored["adjustments"]]}
    assert adjustment_problems(no_reason, reply, case.executor_claims, True)


def test_a_changed_verdict_without_an_adjustment_is_caught() -> None:
    case, stored = first(lambda c, s: s["verdict"] != s["model_verdict"])
    reply = model_reply(scripted_reply(case))
    assert adjustment_problems({**stored, "adjustments": []}, reply, case.executor_claims, valid(case))


def test_refs_the_model_gave_must_be_kept() -> None:
    def gave_refs(case: Case, stored: dict[str, Any]) -> bool:
        reply = model_reply(scripted_reply(case))
        return (
            reply is not None and valid(case) and any(r.trace_ref for c in reply.claim_checks for r in c.evidence_refs)
        )

    case, stored = first(gave_refs)
    reply = model_reply(scripted_reply(case))
    assert model_ref_problems(stored, reply, case.executor_claims, True) == []
    swapped = copy.deepcopy(stored)
    for check in swapped["claim_checks"]:
        check["evidence_refs"] = [{"trace_ref": "T999", "tool_name": "x", "source_invocation_ids": ["nope"]}]
    assert model_ref_problems(swapped, reply, case.executor_claims, True)


def test_filled_ref_fields_are_the_trace_summarys_or_a_given_one() -> None:
    """A ref whose trace_ref names a trace entry carries a tool name and ids that the entry, the model's ref or a
    binding of the claim gave: an upper-cased tool name or another invocation's id is a fault, on every case."""
    cases = [(c, persisted(c)) for c in POLICY]
    with_refs = [(c, s) for c, s in cases if any(r for k in s["claim_checks"] for r in k["evidence_refs"])]
    assert len(with_refs) > 20
    other = "inv-of-no-entry-anywhere"
    for case, stored in with_refs:
        args = (model_reply(scripted_reply(case)), case.executor_claims, case.trace(2000), valid(case))
        assert filled_ref_problems(stored, *args) == [], case.id
        upper, foreign = copy.deepcopy(stored), copy.deepcopy(stored)
        for check in upper["claim_checks"]:
            for ref in check["evidence_refs"]:
                ref["tool_name"] = str(ref.get("tool_name")).upper()
        for check in foreign["claim_checks"]:
            for ref in check["evidence_refs"]:
                ref["source_invocation_ids"] = [*ref.get("source_invocation_ids", []), other]
        named = any(
            r.get("trace_ref") in {e.trace_ref for e in case.trace(2000)}
            for k in stored["claim_checks"]
            for r in k["evidence_refs"]
        )
        assert bool(filled_ref_problems(upper, *args)) == named, case.id
        assert bool(filled_ref_problems(foreign, *args)) == named, case.id


@pytest.mark.parametrize(
    "change",
    [
        {"model": ""},
        {"prompt_version": None},
        {"latency_ms": -1},
        {"latency_ms": "12"},
        {"usage": {"total_tokens": "many"}},
        {"usage": [1, 2]},
    ],
)
def test_the_verifier_block_is_typed(change: dict[str, Any]) -> None:
    stored = persisted(POLICY[0])
    assert verifier_block_problems(stored) == []
    assert verifier_block_problems({**stored, "verifier": {**stored["verifier"], **change}})


def test_a_verifier_block_may_carry_keys_of_its_own_and_any_values() -> None:
    block = {"model": "m", "prompt_version": "v9", "latency_ms": 0, "usage": {}, "vendor": {"x": 1}}
    assert verifier_block_problems({"verifier": block}) == []


def test_info_names_the_protocol() -> None:
    assert info_problems({"name": "n", "version": "1", "protocol": "sut_protocol_v1"}) == []
    assert info_problems({"name": "n", "version": "1"})
    assert info_problems({"name": "n", "version": "1", "protocol": "sut_protocol_v2"})
    assert info_problems({"name": "", "version": "1", "protocol": "sut_protocol_v1"})
