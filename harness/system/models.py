"""Typed models for every object the two spec changes name.

The executor's structured output is *data under test*: it is kept as a plain
dict and judged by the gatekeeper, never rejected by pydantic. Everything the
system itself produces (gatekeeper result, sanitised checks, the persisted
evaluation) is strict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """Base for the system's own records: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class Verdict(StrEnum):
    PASS = "PASS"
    LOW_CONFID = "LOW_CONFID"
    REJECT = "REJECT"


SEVERITY: dict[Verdict, int] = {Verdict.PASS: 0, Verdict.LOW_CONFID: 1, Verdict.REJECT: 2}


def most_severe(*verdicts: Verdict | None) -> Verdict:
    """The most severe of the given verdicts (PASS < LOW_CONFID < REJECT)."""
    present = [v for v in verdicts if v is not None]
    if not present:
        raise ValueError("most_severe needs at least one verdict")
    return max(present, key=SEVERITY.__getitem__)


class Derivability(StrEnum):
    DIRECT_OBSERVATION = "direct_observation"
    REASONABLE_INFERENCE = "reasonable_inference"
    OVERSTATED = "overstated"
    UNSUPPORTED = "unsupported"
    EXTERNAL_UNKNOWN = "external_unknown"
    CONTRADICTED = "contradicted"


DERIVABILITY_CLASSES: list[str] = [d.value for d in Derivability]
"""The six claim classes by name, in the spec's order: every table, chart and metric lists them so."""


class LegacyVerification(StrEnum):
    DIRECT_EVIDENCE = "direct_evidence"
    INDIRECT_SUPPORT = "indirect_support"
    NO_EVIDENCE = "no_evidence"
    CONTRADICTED = "contradicted"


LEGACY_MAPPING: dict[Derivability, LegacyVerification] = {
    Derivability.DIRECT_OBSERVATION: LegacyVerification.DIRECT_EVIDENCE,
    Derivability.REASONABLE_INFERENCE: LegacyVerification.INDIRECT_SUPPORT,
    Derivability.OVERSTATED: LegacyVerification.INDIRECT_SUPPORT,
    Derivability.UNSUPPORTED: LegacyVerification.NO_EVIDENCE,
    Derivability.EXTERNAL_UNKNOWN: LegacyVerification.NO_EVIDENCE,
    Derivability.CONTRADICTED: LegacyVerification.CONTRADICTED,
}

ParseStatusValue = Literal["valid", "missing", "malformed"]
GatekeeperStatus = Literal["pass", "warn", "fail"]
InvocationStatus = Literal["success", "error"]


# --- the session and its tool calls -------------------------------------------------


class ToolInvocation(Strict):
    """One `tool_invocation` row of a session."""

    id: str = Field(min_length=1)
    tool_name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: InvocationStatus = "success"
    result: str = ""


class TraceEntry(Strict):
    """One `tool_trace_summary` entry: one invocation, with a result excerpt."""

    trace_ref: str
    tool_name: str
    source_invocation_ids: list[str] = Field(default_factory=list)
    status: InvocationStatus = "success"
    result_excerpt: str = ""
    truncated: bool = False


# --- executor output ----------------------------------------------------------------


class ParseStatus(Strict):
    """`executor_output_parse_status`."""

    status: ParseStatusValue
    reason: str | None = None


class ParsedExecutorOutput(Strict):
    """The parser's result: the status, and the object when it is `valid`."""

    parse_status: ParseStatus
    structured: dict[str, Any] | None = None


class EvidenceRef(BaseModel):
    """A pointer at tool evidence: the executor's evidence binding and the verifier's evidence ref alike.

    Every available field is kept (INTERPRETATION §7); unknown keys a model adds are ignored.
    """

    model_config = ConfigDict(extra="ignore")
    trace_ref: str | None = None
    tool_name: str | None = None
    source_invocation_ids: list[str] = Field(default_factory=list)


class EvidenceBinding(EvidenceRef):
    """An executor's evidence binding, as the policy reads it after the gatekeeper ran (same fields as a ref).

    `well_typed` is False for a binding given in a mistyped form (a bare `source_invocation_ids`, a single
    object for `evidence_bindings`): its ids are still checked, but it never resolves (INTERPRETATION §3).
    It is never serialised.
    """

    well_typed: bool = Field(default=True, exclude=True)


class Claim(BaseModel):
    """A structured claim as the policy reads it (lenient: the gatekeeper judges form)."""

    model_config = ConfigDict(extra="ignore")
    claim_id: str
    statement: str = ""
    status: str = "confirmed"
    critical: bool = False
    evidence_bindings: list[EvidenceBinding] = Field(default_factory=list)


@dataclass(slots=True)
class BindingEntry:
    """One binding object a claim names, as given: where it sits (`""` for a single object given instead of a
    list, else `[i]`), the object itself, and whether its form is usable (a mistyped one never resolves, §3)."""

    path: str
    raw: Any
    well_typed: bool


@dataclass(slots=True)
class ClaimEntry:
    """One item of the executor's `claims` list, as given (`raw` is the item itself, not a copy).

    `claim_id` is the item's id when it is an object with a string `claim_id`, else None; `first` is True for
    the first item carrying its id (a repeat is a gatekeeper failure, and the policy reads the first only).
    """

    index: int
    raw: Any
    claim_id: str | None = None
    first: bool = False
    bindings: tuple[BindingEntry, ...] = ()

    @property
    def is_object(self) -> bool:
        return isinstance(self.raw, dict)


@dataclass(frozen=True, slots=True)
class ExecutorOutput:
    """The executor output as the parser read it, typed once for every layer: the parse status, every item of the
    claims list with its validity, and the claims as the policy reads them. Made by `parser.executor_output`
    (plain dataclasses: made for every case run, they must cost next to nothing)."""

    parsed: ParsedExecutorOutput
    entries: tuple[ClaimEntry, ...] = ()
    """Every item of the claims list, in order; empty unless the output is `valid`."""
    claims: list[Claim] = field(default_factory=list)
    """The policy's reading: one `Claim` per claim id, from its first item (form errors are the gatekeeper's)."""

    @property
    def valid(self) -> bool:
        return self.parsed.parse_status.status == "valid"

    @property
    def objects(self) -> list[dict[str, Any]]:
        """The items that are JSON objects, with or without an id (what a person reading the output sees)."""
        return [e.raw for e in self.entries if e.is_object]

    @property
    def claim_objects(self) -> list[dict[str, Any]]:
        """The items that are objects with a string `claim_id`, repeats included, in order."""
        return [e.raw for e in self.entries if e.claim_id is not None]

    @property
    def claim_count(self) -> int | None:
        """The number of claims the executor made: its objects with a string `claim_id`, a repeated id counted
        each time it was given (None when the output is not `valid`). The one count the corpus statistics, the
        export and the generator use; `claims` (the policy's, repeats dropped) is not a count of what was said."""
        return len(self.claim_objects) if self.valid else None


# --- gatekeeper ---------------------------------------------------------------------


class GatekeeperIssue(Strict):
    rule: str
    message: str
    claim_id: str | None = None
    path: str | None = None


class GatekeeperResult(Strict):
    status: GatekeeperStatus
    failed_rules: list[str] = Field(default_factory=list)
    errors: list[GatekeeperIssue] = Field(default_factory=list)
    warnings: list[GatekeeperIssue] = Field(default_factory=list)

    @property
    def warning_rules(self) -> list[str]:
        return sorted({w.rule for w in self.warnings})


# --- verifier reply (the model's contract) -----------------------------------------


class ClaimCheck(BaseModel):
    model_config = ConfigDict(extra="ignore")
    claim_id: str
    verification: Derivability
    detail: str = ""
    evidence_refs: list[EvidenceRef] = Field(default_factory=list)


class LegacyFact(BaseModel):
    """A `facts_checked` item. Only its verification value is constrained."""

    model_config = ConfigDict(extra="allow")
    verification: LegacyVerification | None = None


class VerifierReply(BaseModel):
    """The JSON object the verifier model must return. Extra keys are ignored.

    Numbers are strict: `"0.92"`, `true` or `2.0` for a count make the reply
    invalid rather than being coerced (broken replies are never repaired).
    """

    model_config = ConfigDict(extra="ignore")
    verdict: Verdict
    groundedness_score: float = Field(ge=0.0, le=1.0, strict=True)
    critical_fact_count: int = Field(ge=0, strict=True)
    claim_checks: list[ClaimCheck]
    facts_checked: list[LegacyFact]
    rationale: str


ReplyStatusValue = Literal["valid", "invalid"]
InvalidReason = Literal["empty", "not_json", "schema", "truncated", "refusal", "transport"]


class ReplyStatus(Strict):
    status: ReplyStatusValue
    reason: InvalidReason | None = None
    message: str | None = None


class Usage(Strict):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class VerifierCall(Strict):
    """What one verifier call returned, before the policy reads it."""

    raw_reply: str | None
    model: str
    prompt_name: str | None = None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    finish_reason: str | None = None
    latency_ms: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    refusal: str | None = None
    attempts: int = 1
    cached: bool = False


# --- policy output and persistence ------------------------------------------------


class AdjustmentStep(StrEnum):
    """The policy steps that record an adjustment (INTERPRETATION §5); the values are the persisted text."""

    UNKNOWN_CLAIM = "sanitise.unknown_claim"
    DUPLICATE_CHECK = "sanitise.duplicate_check"
    MISSING_CHECK = "sanitise.missing_check"
    UNRESOLVED_DIRECT = "sanitise.unresolved_direct"
    PARSE_STATUS = "policy.parse_status"
    INVALID_REPLY = "policy.invalid_reply"
    GATEKEEPER_FAIL = "policy.gatekeeper_fail"
    CLAIM_GUARD = "policy.claim_guard"


class Adjustment(Strict):
    """One policy step that changed the verdict or a claim check, with its reason."""

    step: AdjustmentStep
    reason: str
    claim_id: str | None = None
    from_verdict: Verdict | None = None
    to_verdict: Verdict | None = None


class PolicySettings(BaseModel):
    """The verdict policy's switches, one object from the study to the pipeline and into the manifest.

    The claim guard (§5 step 5) can be turned off to measure the bare model verdict.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    claim_guard: bool = True


class FactChecked(Strict):
    claim_id: str
    fact: str
    verification: LegacyVerification
    detail: str = ""


class VerifierInfo(Strict):
    model: str
    prompt_name: str | None = None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    latency_ms: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    attempts: int = 1
    error: str | None = None


class VerifierEvaluation(Strict):
    """`diagnosis_session.self_evaluation.verifier_evaluation`, every field of §7."""

    schema_version: Literal["verifier_evaluation_v1"] = "verifier_evaluation_v1"
    verdict: Verdict
    model_verdict: Verdict | None
    groundedness_score: float | None
    critical_fact_count: int
    model_critical_fact_count: int | None = None
    claim_checks: list[ClaimCheck]
    facts_checked: list[FactChecked]
    rationale: str
    executor_output_parse_status: ParseStatus
    tool_trace_summary: list[TraceEntry]
    gatekeeper_result: GatekeeperResult
    reply_status: ReplyStatus
    derived_verdict: Verdict | None = None
    claim_guard: bool = True
    adjustments: list[Adjustment] = Field(default_factory=list)
    verifier: VerifierInfo


PERSISTED_FIELDS: tuple[str, ...] = (
    "verdict",
    "model_verdict",
    "groundedness_score",
    "critical_fact_count",
    "claim_checks",
    "facts_checked",
    "rationale",
    "executor_output_parse_status",
    "tool_trace_summary",
    "gatekeeper_result",
    "adjustments",
    "verifier",
)
"""The fields INTERPRETATION §7 requires in every persisted evaluation."""


# --- verifier input -----------------------------------------------------------------


class ExecutorEmission(Strict):
    """What the executor emitted: the prose answer and the raw structured output (or nothing)."""

    final_answer: str = ""
    structured_output_raw: str | None = None


class VerifierInput(Strict):
    """The spec's explicit verification inputs, as rendered into the verifier prompt."""

    question: str
    executor_final_answer: str
    executor_output_parse_status: ParseStatus
    executor_structured_output: dict[str, Any] | None
    claims: list[Any]
    tool_trace_summary: list[TraceEntry]
    gatekeeper_result: GatekeeperResult
    executor_claims: list[Claim] | None = Field(default=None, exclude=True, repr=False)
    """`claims` as the policy reads them (`policy.structured_claims` of the structured output), read once by the
    pipeline; never rendered nor serialised. None when whoever built the inputs did not read them: a verifier
    that needs them then reads them from the structured output itself."""
