"""The SUT protocol: what a conformance kit sends to any implementation of the spec, and what comes back.

Language neutral: `POST <sut>/verify` with a `VerifyRequest` body, answered by a `VerifyResponse`;
`GET <sut>/info` answered by `SutInfo`. The JSON Schemas under docs/sut-protocol/ are generated from
these models (`protocol_schemas`). A response is read as `ReportedEvaluation`: the names of
INTERPRETATION §7, open to keys of the SUT's own (its wording, latency and tokens are not judged).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.system.models import (
    GatekeeperStatus,
    InvocationStatus,
    ParseStatusValue,
    ToolInvocation,
    TraceEntry,
    Verdict,
)
from harness.system.trace import DEFAULT_EXCERPT_CHARS

PROTOCOL_VERSION: Literal["sut_protocol_v1"] = "sut_protocol_v1"


class Closed(BaseModel):
    """A request object: unknown keys are errors (a kit and a SUT must agree on every input)."""

    model_config = ConfigDict(extra="forbid")


class Open(BaseModel):
    """A response object: keys a SUT adds are kept, never judged."""

    model_config = ConfigDict(extra="allow")


# --- request ------------------------------------------------------------------------------


class OtherSessionRows(Closed):
    """Rows of another diagnosis session: their invocation ids are not the current session's."""

    id: str = Field(min_length=1)
    tool_invocations: list[ToolInvocation] = Field(default_factory=list)


def repeated_ids(ids: list[str], where: str, what: str = "invocation id") -> list[str]:
    """A message for each id that repeats in `ids` (listed at `where`)."""
    return [f"{where}: {what} {i!r} repeats" for i, n in Counter(ids).items() if n > 1]


class SessionInput(Closed):
    id: str = Field(min_length=1)
    question: str
    tool_invocations: list[ToolInvocation]
    other_sessions: list[OtherSessionRows] = Field(default_factory=list)
    self_evaluation: dict[str, Any] = Field(
        default_factory=dict, description="what self_evaluation held before the verifier ran"
    )
    tool_trace_summary: list[TraceEntry] | None = Field(
        default=None, description="present when the case gives one; otherwise the SUT builds it from the rows"
    )

    @model_validator(mode="after")
    def _one_store_per_request(self) -> SessionInput:
        """The rows must fit one store (INTERPRETATION §2): invocation ids unique within each session, and
        session ids unique within the request. Else the request is refused, naming the key."""
        problems = repeated_ids([inv.id for inv in self.tool_invocations], "tool_invocations")
        for index, other in enumerate(self.other_sessions):
            problems += repeated_ids(
                [inv.id for inv in other.tool_invocations], f"other_sessions.{index}.tool_invocations"
            )
        problems += repeated_ids(
            [self.id, *(other.id for other in self.other_sessions)], "other_sessions", "session id"
        )
        if problems:
            raise ValueError("; ".join(problems))
        return self


class ExecutorInput(Closed):
    final_answer: str
    structured_output_raw: str | None = Field(description="the exact structured-output text emitted, or null")


class VerifierEndpoint(Closed):
    """The OpenAI-compatible model endpoint the SUT must call (`<base_url>/chat/completions`)."""

    base_url: str
    model: str


class VerifySettings(Closed):
    """Everything besides the session that decides the outcome."""

    excerpt_chars: int = Field(default=DEFAULT_EXCERPT_CHARS, ge=1, description="trace summary excerpt limit")
    claim_guard: bool = Field(default=True, description="INTERPRETATION §5 step 5")
    timeout_s: float = Field(default=30.0, gt=0, description="how long the SUT may wait for the model")


class VerifyRequest(Closed):
    protocol: Literal["sut_protocol_v1"] = PROTOCOL_VERSION
    session: SessionInput
    executor: ExecutorInput
    verifier: VerifierEndpoint
    settings: VerifySettings = Field(default_factory=VerifySettings)


# --- response -----------------------------------------------------------------------------


class ReportedParseStatus(Open):
    status: ParseStatusValue


class ReportedIssue(Open):
    rule: str
    message: str = ""
    claim_id: str | None = None
    path: str | None = None


class ReportedGatekeeper(Open):
    status: GatekeeperStatus
    failed_rules: list[str]
    errors: list[ReportedIssue]
    warnings: list[ReportedIssue]

    @property
    def warning_rules(self) -> list[str]:
        return sorted({w.rule for w in self.warnings})


class ReportedRef(Open):
    trace_ref: str | None = None
    tool_name: str | None = None
    source_invocation_ids: list[str] = Field(default_factory=list)


class ReportedCheck(Open):
    claim_id: str
    verification: str = Field(description="one of the six derivability classes (§4)")
    detail: str = ""
    evidence_refs: list[ReportedRef]


class ReportedFact(Open):
    claim_id: str
    fact: str
    verification: str = Field(description="one of the four legacy classes (§6)")
    detail: str = ""


class ReportedTraceEntry(Open):
    trace_ref: str
    tool_name: str
    source_invocation_ids: list[str]
    status: InvocationStatus
    result_excerpt: str


class ReportedEvaluation(Open):
    """`self_evaluation.verifier_evaluation` with the names of INTERPRETATION §7."""

    verdict: Verdict
    model_verdict: Verdict | None
    groundedness_score: float | None
    critical_fact_count: int
    claim_checks: list[ReportedCheck]
    facts_checked: list[ReportedFact]
    rationale: str
    executor_output_parse_status: ReportedParseStatus
    tool_trace_summary: list[ReportedTraceEntry]
    gatekeeper_result: ReportedGatekeeper
    adjustments: list[dict[str, Any]]
    verifier: dict[str, Any] = Field(description="the verifier's model, prompt version, latency and token usage")


class ReportedSelfEvaluation(Open):
    verifier_evaluation: ReportedEvaluation


class VerifyResponse(Open):
    """The whole persisted `self_evaluation` after the write, sibling keys included."""

    self_evaluation: ReportedSelfEvaluation


class SutInfo(Open):
    """`GET <sut>/info`: who answers."""

    name: str
    version: str
    protocol: str = PROTOCOL_VERSION


def protocol_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of both directions, by file name."""
    return {
        "verify-request.schema.json": VerifyRequest.model_json_schema(),
        "verify-response.schema.json": VerifyResponse.model_json_schema(),
        "info-response.schema.json": SutInfo.model_json_schema(),
    }
