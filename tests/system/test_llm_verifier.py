"""LLMVerifier and make_verifier: the request it sends, the call it records, and each fault as the policy sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.llm.cache import CachingChatModel
from harness.llm.fake import FakeChatModel
from harness.llm.openai_model import OpenAIChatModel
from harness.llm.types import ChatResponse, TokenUsage
from harness.run.execute import run_case
from harness.system.models import Verdict, VerifierReply
from harness.system.pipeline import prepare
from harness.system.prompts import load_prompt
from harness.system.reply import parse_verifier_reply
from harness.system.verifiers.base import Verifier
from harness.system.verifiers.factory import ModelSpecError, make_verifier
from harness.system.verifiers.llm import LLMVerifier, reply_schema

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-SECRET-verifier-91b2"
FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5.0, "max_attempts": 2}


def quality_case() -> Case:
    """A quality case with valid structured claims, from the committed corpus."""
    for case in load_cases([ROOT / "cases" / "quality"]):
        if case.kind == "quality" and case.executor.structured_output is not None:
            return case
    raise AssertionError("no quality case with structured output under cases/quality")


@pytest.fixture(scope="module")
def case() -> Case:
    return quality_case()


def verifier_for(server: LocalOpenAIServer, prompt: str = "baseline", **settings: object) -> LLMVerifier:
    verifier = make_verifier(
        f"openai:{server.model}", prompt, base_url=server.base_url, api_key=KEY, **{**FAST, **settings}
    )
    assert isinstance(verifier, LLMVerifier)
    return verifier


async def test_the_request_carries_the_variant_and_the_reply_schema(case: Case) -> None:
    fake = FakeChatModel('{"verdict": "PASS"}', name="fake-model")
    variant = load_prompt("strict-evidence")
    verifier = LLMVerifier(fake, variant)
    assert isinstance(verifier, Verifier)
    inputs = prepare(case.session.question, case.executor.emission(), case.session.tool_invocations).inputs
    call = await verifier.verify(inputs)
    sent = fake.requests[0]
    assert sent.messages == variant.render(inputs)
    assert sent.response_schema == reply_schema()
    # the sent schema is the contract, closed: same required fields, no extra keys anywhere
    assert sent.response_schema["required"] == VerifierReply.model_json_schema()["required"]
    assert sent.response_schema["additionalProperties"] is False
    assert sent.response_schema["$defs"]["LegacyFact"]["additionalProperties"] is False
    assert (sent.temperature, sent.seed, sent.max_tokens) == (variant.temperature, variant.seed, variant.max_tokens)
    assert (call.model, call.prompt_name, call.prompt_hash) == ("fake-model", "strict-evidence", variant.content_hash)
    assert call.raw_reply == '{"verdict": "PASS"}'


def test_the_call_keeps_usage_latency_attempts_and_a_transport_error_reason() -> None:
    verifier = LLMVerifier(FakeChatModel("x"), load_prompt("baseline"))
    ok = verifier.call_from(
        ChatResponse(
            text="t",
            finish_reason="stop",
            usage=TokenUsage(prompt_tokens=5, completion_tokens=2, total_tokens=7),
            latency_ms=12.5,
            attempts=3,
            cached=True,
        )
    )
    assert (ok.usage.total_tokens, ok.latency_ms, ok.attempts, ok.cached, ok.error) == (7, 12.5, 3, True, None)
    failed = verifier.call_from(ChatResponse(error="timeout", error_detail="no reply within 5 s", attempts=2))
    assert failed.error == "timeout: no reply within 5 s" and failed.raw_reply is None
    assert parse_verifier_reply(failed)[1].reason == "transport"


async def test_a_case_runs_end_to_end_over_http_and_records_the_prompt(
    openai_server: LocalOpenAIServer, case: Case
) -> None:
    verifier = verifier_for(openai_server, "strict-evidence")
    try:
        evaluation, persisted = await run_case(case, verifier)
    finally:
        await verifier.aclose()
    assert evaluation.reply_status.status == "valid"
    claim_ids = [c["claim_id"] for c in case.executor.structured_output["claims"]]  # type: ignore[index]
    assert [c.claim_id for c in evaluation.claim_checks] == claim_ids
    assert evaluation.model_verdict == Verdict.PASS  # what the local responder said
    info = evaluation.verifier
    assert (info.model, info.prompt_name) == (f"openai:{openai_server.model}", "strict-evidence")
    assert (info.prompt_version, info.prompt_hash) == ("1", load_prompt("strict-evidence").content_hash)
    assert info.usage.total_tokens > 0 and info.attempts == 1
    assert openai_server.response_formats() == ["json_schema"]
    assert openai_server.requests[0]["response_format"]["json_schema"]["schema"] == reply_schema()
    assert KEY not in json.dumps(persisted) and KEY not in json.dumps(verifier.describe())


@pytest.mark.parametrize(
    ("faults", "reason"),
    [
        (["length"], "truncated"),
        (["empty"], "empty"),
        (["refusal"], "refusal"),
        (["not_json_content"], "not_json"),
        ([Fault(kind="slow", delay_s=2.0)] * 2, "transport"),
        (["server_error"] * 2, "transport"),
    ],
)
async def test_each_fault_ends_as_an_invalid_reply_with_its_reason(
    openai_server: LocalOpenAIServer, case: Case, faults: list[Fault | str], reason: str
) -> None:
    openai_server.script(*faults)
    verifier = verifier_for(openai_server, timeout=0.3)
    try:
        evaluation, _ = await run_case(case, verifier)
    finally:
        await verifier.aclose()
    assert (evaluation.reply_status.status, evaluation.reply_status.reason) == ("invalid", reason)
    assert evaluation.verdict == Verdict.LOW_CONFID or (
        evaluation.gatekeeper_result.status == "fail" and evaluation.verdict == Verdict.REJECT
    )
    if reason == "transport":
        expected = "timeout" if isinstance(faults[0], Fault) else "server_error"
        assert (evaluation.verifier.error or "").startswith(expected)
        assert evaluation.verifier.attempts == 2


async def test_a_retried_fault_recovers_into_a_valid_reply(openai_server: LocalOpenAIServer, case: Case) -> None:
    openai_server.script(Fault(kind="rate_limit", retry_after="0"), "server_error")
    verifier = verifier_for(openai_server, max_attempts=3)
    try:
        evaluation, _ = await run_case(case, verifier)
    finally:
        await verifier.aclose()
    assert evaluation.reply_status.status == "valid" and evaluation.verifier.attempts == 3


async def test_the_factory_cache_answers_a_rerun_without_requests(
    openai_server: LocalOpenAIServer, case: Case, tmp_path: Path
) -> None:
    for _ in range(2):
        verifier = make_verifier(
            f"openai:{openai_server.model}",
            "baseline",
            base_url=openai_server.base_url,
            cache_dir=tmp_path,
            cache_epoch=3,
        )
        assert isinstance(verifier, LLMVerifier) and isinstance(verifier.model, CachingChatModel)
        try:
            await run_case(case, verifier)
        finally:
            await verifier.aclose()
    assert openai_server.request_count == 1


def test_make_verifier_knows_reference_and_openai_specs() -> None:
    from harness.run.providers import build_verifier

    reference = build_verifier("reference", "baseline")
    assert type(reference).__name__ == "ReferenceVerifier" and isinstance(reference, Verifier)
    with pytest.raises(ModelSpecError, match=r"harness\.run\.providers"):
        make_verifier("reference")  # the system's factory does not import the baseline (replay fingerprint)
    assert isinstance(make_verifier("openai:gpt-test", base_url="http://127.0.0.1:9/v1"), LLMVerifier)
    llm = make_verifier("openai:gpt-test", "strict-evidence", base_url="http://127.0.0.1:9/v1", max_attempts=5)
    assert isinstance(llm, LLMVerifier) and isinstance(llm.model, OpenAIChatModel)
    assert llm.name == "openai:gpt-test" and llm.model.settings.max_attempts == 5
    assert llm.describe()["prompt"]["name"] == "strict-evidence"  # type: ignore[index]
    for bad in ("gpt-4o", "openai:", "anthropic:claude"):
        with pytest.raises(ModelSpecError, match="unknown model spec"):
            make_verifier(bad)
    with pytest.raises(ValueError, match="max_atempts"):
        make_verifier("openai:x", max_atempts=3)
