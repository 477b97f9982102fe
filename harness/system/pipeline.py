"""The pipeline: parse → gatekeeper → verifier → policy → persist.

`prepare` and `conclude` are pure; `verify_session` adds the two I/O edges
(the verifier call and the store).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from harness.system.gatekeeper import GatekeeperInput, run_gatekeeper
from harness.system.models import (
    Claim,
    ExecutorEmission,
    ExecutorOutput,
    GatekeeperResult,
    ParsedExecutorOutput,
    ToolInvocation,
    TraceEntry,
    VerifierCall,
    VerifierEvaluation,
    VerifierInfo,
    VerifierInput,
    VerifierReply,
)
from harness.system.parser import executor_output, parse_structured_output
from harness.system.policy import PolicySettings, apply_policy
from harness.system.reply import parse_verifier_reply
from harness.system.store import Store
from harness.system.trace import DEFAULT_EXCERPT_CHARS, session_trace_summary
from harness.system.verifiers.base import Verifier


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the verifier model runs."""

    parsed: ParsedExecutorOutput
    output: ExecutorOutput
    """The whole reading of the executor output (`parser.executor_output`), of which `claims` is the policy's part."""
    claims: list[Claim]
    """The executor's claims as the policy reads them (`structured_claims`): read here, once per case run, and
    reused by the verifier (through its inputs), the policy and the result record."""
    invocations: dict[str, ToolInvocation]
    trace: list[TraceEntry]
    gatekeeper: GatekeeperResult
    inputs: VerifierInput


def prepare(
    question: str,
    emission: ExecutorEmission,
    invocations: Sequence[ToolInvocation],
    trace: Sequence[TraceEntry] | None = None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> Prepared:
    """Parse the executor output, read its claims, build the trace summary and run the gatekeeper."""
    parsed = parse_structured_output(emission.structured_output_raw)
    output = executor_output(parsed)
    claims = output.claims
    rows = {inv.id: inv for inv in invocations}
    summary = session_trace_summary(trace, invocations, excerpt_chars)
    gatekeeper = run_gatekeeper(GatekeeperInput(parsed=parsed, invocations=rows, trace=summary, output=output))
    structured = parsed.structured
    inputs = VerifierInput(
        question=question,
        executor_final_answer=emission.final_answer,
        executor_output_parse_status=parsed.parse_status,
        executor_structured_output=structured,
        claims=[e.raw for e in output.entries],  # every item as given: the verifier sees what the executor wrote
        tool_trace_summary=summary,
        gatekeeper_result=gatekeeper,
        executor_claims=claims,
    )
    return Prepared(
        parsed=parsed,
        output=output,
        claims=claims,
        invocations=rows,
        trace=summary,
        gatekeeper=gatekeeper,
        inputs=inputs,
    )


def conclude(prepared: Prepared, call: VerifierCall, settings: PolicySettings = PolicySettings()) -> VerifierEvaluation:
    """Read the verifier's reply and apply the verdict policy: the evaluation to persist."""
    return conclude_with_reply(prepared, call, settings)[0]


def conclude_with_reply(
    prepared: Prepared, call: VerifierCall, settings: PolicySettings = PolicySettings()
) -> tuple[VerifierEvaluation, VerifierReply | None]:
    """`conclude`, also returning the parsed reply (None when invalid)."""
    reply, reply_status = parse_verifier_reply(call)
    outcome = apply_policy(
        prepared.parsed,
        prepared.gatekeeper,
        reply,
        prepared.invocations,
        prepared.trace,
        settings,
        claims=prepared.claims,
    )
    evaluation = VerifierEvaluation(
        verdict=outcome.verdict,
        model_verdict=outcome.model_verdict,
        groundedness_score=reply.groundedness_score if reply else None,
        critical_fact_count=outcome.critical_fact_count,
        model_critical_fact_count=reply.critical_fact_count if reply else None,
        claim_checks=outcome.claim_checks,
        facts_checked=outcome.facts_checked,
        rationale=reply.rationale if reply else "",
        executor_output_parse_status=prepared.parsed.parse_status,
        tool_trace_summary=prepared.trace,
        gatekeeper_result=prepared.gatekeeper,
        reply_status=reply_status,
        derived_verdict=outcome.derived_verdict,
        claim_guard=settings.claim_guard,
        adjustments=outcome.adjustments,
        verifier=VerifierInfo(
            model=call.model,
            prompt_name=call.prompt_name,
            prompt_version=call.prompt_version,
            prompt_hash=call.prompt_hash,
            latency_ms=call.latency_ms,
            usage=call.usage,
            finish_reason=call.finish_reason,
            attempts=call.attempts,
            error=call.error,
        ),
    )
    return evaluation, reply


@dataclass(frozen=True)
class PipelineRun:
    """One pass through the system: what was persisted, the raw call, and the harness CPU it cost."""

    evaluation: VerifierEvaluation
    reply: VerifierReply | None
    call: VerifierCall
    self_evaluation: dict[str, object]
    cpu_ms: float
    parsed: ParsedExecutorOutput | None = None
    """The executor output as the pipeline parsed it."""
    output: ExecutorOutput | None = None
    """The whole reading of it (`Prepared.output`): a case adopts it instead of parsing again."""
    claims: list[Claim] | None = None
    """Its claims as the pipeline read them (`Prepared.claims`): the result record's claim ids come from here."""


async def run_pipeline(
    store: Store,
    session_id: str,
    question: str,
    emission: ExecutorEmission,
    verifier: Verifier,
    settings: PolicySettings = PolicySettings(),
    trace: Sequence[TraceEntry] | None = None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> PipelineRun:
    """Parse, gatekeep, call the verifier, apply the policy, persist; time the CPU around the call."""
    start = time.thread_time()
    prepared = prepare(question, emission, store.invocations(session_id), trace, excerpt_chars)
    before_call = time.thread_time()
    call = await verifier.verify(prepared.inputs)
    after_call = time.thread_time()
    evaluation, reply = conclude_with_reply(prepared, call, settings)
    persisted = store.write_verifier_evaluation(session_id, evaluation)
    cpu_ms = (before_call - start + time.thread_time() - after_call) * 1000
    return PipelineRun(
        evaluation=evaluation,
        reply=reply,
        call=call,
        self_evaluation=persisted,
        cpu_ms=cpu_ms,
        parsed=prepared.parsed,
        output=prepared.output,
        claims=prepared.claims,
    )


async def verify_session(
    store: Store,
    session_id: str,
    question: str,
    emission: ExecutorEmission,
    verifier: Verifier,
    settings: PolicySettings = PolicySettings(),
    trace: Sequence[TraceEntry] | None = None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> VerifierEvaluation:
    """Run the whole system for one stored session and persist the evaluation."""
    run = await run_pipeline(store, session_id, question, emission, verifier, settings, trace, excerpt_chars)
    return run.evaluation
