"""The deterministic Gatekeeper: a registry of small pure rules (INTERPRETATION §3).

It runs after parsing and before the verifier model; its result is part of the
verifier's input. Each rule takes a `GatekeeperInput` and returns issues.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from harness.system.models import (
    ClaimEntry,
    ExecutorOutput,
    GatekeeperIssue,
    GatekeeperResult,
    GatekeeperStatus,
    ParsedExecutorOutput,
    ToolInvocation,
    TraceEntry,
)
from harness.system.parser import as_invocation_id, binding_invocation_ids, claim_bindings, claim_entries  # noqa: F401 - also read from here

SCHEMA_VERSION = "executor_evidence_v2"
REMOVED_V1_FIELDS = ("diagnosis_summary", "user_facing_answer")
TOP_LEVEL_FIELDS = frozenset({"schema_version", "claims", "open_questions", "next_steps"})
CLAIM_FIELDS = frozenset({"claim_id", "statement", "status", "critical", "evidence_bindings"})
BINDING_FIELDS = frozenset({"trace_ref", "tool_name", "source_invocation_ids"})
CLAIM_STATUSES = ("confirmed", "hypothesis")


@dataclass(frozen=True)
class GatekeeperInput:
    """What the rules see: the parse result and the current session's rows."""

    parsed: ParsedExecutorOutput
    invocations: Mapping[str, ToolInvocation]
    trace: Sequence[TraceEntry]
    output: ExecutorOutput | None = None
    """The parser's reading of `parsed` when the caller has it already (the pipeline does); else read here."""

    @cached_property
    def entries(self) -> tuple[ClaimEntry, ...]:
        """Every item of the claims list (`claim_entries`), read once for all the rules."""
        if self.output is not None and self.output.parsed is self.parsed:
            return self.output.entries
        return tuple(claim_entries(self.parsed.structured))

    @cached_property
    def bindings(self) -> tuple[tuple[str, dict[str, Any], dict[str, Any]], ...]:
        """(path, claim, binding) for every binding object of every object claim, built once for all the rules."""
        return tuple(
            (f"claims[{entry.index}].evidence_bindings{binding.path}", entry.raw, binding.raw)
            for entry in self.entries
            if entry.is_object
            for binding in entry.bindings
        )


RuleFn = Callable[[GatekeeperInput], list[GatekeeperIssue]]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Literal["fail", "warn"]
    check: RuleFn
    description: str


RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: Literal["fail", "warn"], description: str) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function under its id."""

    def register(fn: RuleFn) -> RuleFn:
        RULES[rule_id] = Rule(rule_id, severity, fn, description)
        return fn

    return register


def _issue(rule_id: str, message: str, claim_id: Any = None, path: str | None = None) -> GatekeeperIssue:
    cid = claim_id if isinstance(claim_id, str) else None
    return GatekeeperIssue(rule=rule_id, message=message, claim_id=cid, path=path)


def iter_claims(inp: GatekeeperInput) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, claim) for every claim that is a JSON object."""
    for entry in inp.entries:
        if entry.is_object:
            yield entry.index, entry.raw


def iter_bindings(inp: GatekeeperInput) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(path, claim, binding) for every binding that is a JSON object (a single-object `evidence_bindings` too)."""
    return iter(inp.bindings)


# --- fail rules ---------------------------------------------------------------------

SCHEMA = "schema.executor_v2"


@rule(SCHEMA, "fail", "structured output is parseable executor_evidence_v2 with required fields")
def check_schema(inp: GatekeeperInput) -> list[GatekeeperIssue]:
    status = inp.parsed.parse_status
    if status.status != "valid" or inp.parsed.structured is None:
        return [_issue(SCHEMA, f"structured output is {status.status}: {status.reason}")]
    doc = inp.parsed.structured
    issues: list[GatekeeperIssue] = []
    if doc.get("schema_version") != SCHEMA_VERSION:
        issues.append(
            _issue(
                SCHEMA, f"schema_version is {doc.get('schema_version')!r}, not {SCHEMA_VERSION}", path="schema_version"
            )
        )
    for removed in REMOVED_V1_FIELDS:
        if removed in doc:
            issues.append(_issue(SCHEMA, f"removed V1 field {removed} is present", path=removed))
    for key in ("open_questions", "next_steps"):
        if key in doc and not _is_str_list(doc[key]):
            issues.append(_issue(SCHEMA, f"{key} must be a list of strings", path=key))
    for entry in inp.entries:
        path = f"claims[{entry.index}]"
        if not entry.is_object:
            issues.append(_issue(SCHEMA, "claim is not an object", path=path))
            continue
        issues.extend(_check_claim(entry.raw, path))
        if entry.claim_id is not None and not entry.first:
            issues.append(_issue(SCHEMA, f"claim_id {entry.claim_id} repeats", entry.claim_id, f"{path}.claim_id"))
    return issues


def _check_claim(claim: dict[str, Any], path: str) -> list[GatekeeperIssue]:
    cid = claim.get("claim_id")
    issues: list[GatekeeperIssue] = []
    if not isinstance(cid, str) or not cid:
        issues.append(_issue(SCHEMA, "claim_id is missing or not a non-empty string", path=f"{path}.claim_id"))
    if not isinstance(claim.get("statement"), str):
        issues.append(_issue(SCHEMA, "statement is missing or not a string", cid, f"{path}.statement"))
    if claim.get("status") not in CLAIM_STATUSES:
        issues.append(_issue(SCHEMA, "status must be confirmed or hypothesis", cid, f"{path}.status"))
    if not isinstance(claim.get("critical"), bool):
        issues.append(_issue(SCHEMA, "critical is missing or not a boolean", cid, f"{path}.critical"))
    bindings = claim.get("evidence_bindings", [])
    if not isinstance(bindings, list):
        issues.append(_issue(SCHEMA, "evidence_bindings is not a list", cid, f"{path}.evidence_bindings"))
        return issues
    if claim.get("status") == "confirmed" and not bindings:
        issues.append(_issue(SCHEMA, "confirmed claim has no evidence bindings", cid, f"{path}.evidence_bindings"))
    for bi, binding in enumerate(bindings):
        issues.extend(_check_binding(binding, cid, f"{path}.evidence_bindings[{bi}]"))
    return issues


def _check_binding(binding: Any, cid: Any, path: str) -> list[GatekeeperIssue]:
    if not isinstance(binding, dict):
        return [_issue(SCHEMA, "evidence binding is not an object", cid, path)]
    issues: list[GatekeeperIssue] = []
    tool = binding.get("tool_name")
    if not isinstance(tool, str) or not tool:
        issues.append(_issue(SCHEMA, "binding lacks tool_name", cid, f"{path}.tool_name"))
    trace_ref = binding.get("trace_ref")
    if trace_ref is not None and not isinstance(trace_ref, str):
        issues.append(_issue(SCHEMA, "trace_ref is not a string", cid, f"{path}.trace_ref"))
    ids = binding.get("source_invocation_ids")
    if ids is not None and not _is_str_list(ids):
        issues.append(
            _issue(SCHEMA, "source_invocation_ids is not a list of strings", cid, f"{path}.source_invocation_ids")
        )
    has_trace = isinstance(trace_ref, str) and bool(trace_ref)
    has_ids = isinstance(ids, list) and len(ids) > 0
    if not has_trace and not has_ids:
        issues.append(_issue(SCHEMA, "binding has neither trace_ref nor source_invocation_ids", cid, path))
    return issues


INVOCATION_REF = "evidence.invocation_ref"


@rule(INVOCATION_REF, "fail", "cited invocation ids exist in the current session under the cited tool")
def check_invocation_refs(inp: GatekeeperInput) -> list[GatekeeperIssue]:
    issues: list[GatekeeperIssue] = []
    for path, claim, binding in iter_bindings(inp):
        cid = claim.get("claim_id")
        tool = binding.get("tool_name") if isinstance(binding.get("tool_name"), str) else None
        for inv_id in binding_invocation_ids(binding):
            problem = cited_row_problem(inv_id, tool, inp.invocations)
            if problem is not None:
                message, field = problem
                issues.append(_issue(INVOCATION_REF, message, cid, f"{path}.{field}"))
    return issues


def cited_row_problem(
    inv_id: str, tool_name: str | None, invocations: Mapping[str, ToolInvocation]
) -> tuple[str, str] | None:
    """Why a cited invocation id does not resolve (message, binding field), or None when it does.

    The one rule of binding resolution (§3): the id is a row of the current session and, when the binding
    names a tool, that row was a call of it. The gatekeeper reports it; the policy resolves bindings by it.
    """
    row = invocations.get(inv_id)
    if row is None:
        return f"{inv_id} is not an invocation of this session", "source_invocation_ids"
    if tool_name is not None and tool_name != row.tool_name:
        return f"{inv_id} was a {row.tool_name} call, the binding says {tool_name}", "tool_name"
    return None


# --- warning rules ------------------------------------------------------------------


@rule("schema.unknown_field", "warn", "fields this schema does not know")
def check_unknown_fields(inp: GatekeeperInput) -> list[GatekeeperIssue]:
    doc = inp.parsed.structured
    if doc is None:
        return []
    known_top = TOP_LEVEL_FIELDS | set(REMOVED_V1_FIELDS)  # removed fields already fail
    issues = [_issue("schema.unknown_field", f"unknown field {key}", path=key) for key in doc if key not in known_top]
    for ci, claim in iter_claims(inp):
        issues += [
            _issue("schema.unknown_field", f"unknown claim field {key}", claim.get("claim_id"), f"claims[{ci}].{key}")
            for key in claim
            if key not in CLAIM_FIELDS
        ]
    for path, claim, binding in iter_bindings(inp):
        issues += [
            _issue("schema.unknown_field", f"unknown binding field {key}", claim.get("claim_id"), f"{path}.{key}")
            for key in binding
            if key not in BINDING_FIELDS
        ]
    return issues


@rule("evidence.trace_ref", "warn", "a binding's trace_ref is in the session's tool_trace_summary")
def check_trace_refs(inp: GatekeeperInput) -> list[GatekeeperIssue]:
    known = {entry.trace_ref for entry in inp.trace}
    return [
        _issue(
            "evidence.trace_ref",
            f"trace_ref {binding['trace_ref']} is not in the trace summary",
            claim.get("claim_id"),
            f"{path}.trace_ref",
        )
        for path, claim, binding in iter_bindings(inp)
        if isinstance(binding.get("trace_ref"), str) and binding["trace_ref"] and binding["trace_ref"] not in known
    ]


@rule("evidence.failed_invocation", "warn", "a binding cites an invocation whose status is error")
def check_failed_invocations(inp: GatekeeperInput) -> list[GatekeeperIssue]:
    return [
        _issue(
            "evidence.failed_invocation",
            f"{inv_id} ended in error",
            claim.get("claim_id"),
            f"{path}.source_invocation_ids",
        )
        for path, claim, binding in iter_bindings(inp)
        for inv_id in binding_invocation_ids(binding)
        if (row := inp.invocations.get(inv_id)) is not None and row.status == "error"
    ]


@rule("claims.no_critical", "warn", "at least one claim is marked critical (else PASS is impossible)")
def check_no_critical(inp: GatekeeperInput) -> list[GatekeeperIssue]:
    if inp.parsed.structured is None:
        return []
    if any(claim.get("critical") is True for _, claim in iter_claims(inp)):
        return []
    return [_issue("claims.no_critical", "no claim is marked critical; PASS is impossible")]


# --- running ------------------------------------------------------------------------


def run_gatekeeper(inp: GatekeeperInput, rules: Mapping[str, Rule] | None = None) -> GatekeeperResult:
    """Run every registered rule; fail if any fail rule fires, else warn, else pass."""
    errors: list[GatekeeperIssue] = []
    warnings: list[GatekeeperIssue] = []
    for registered in (rules or RULES).values():
        found = registered.check(inp)
        (errors if registered.severity == "fail" else warnings).extend(found)
    status: GatekeeperStatus = "fail" if errors else "warn" if warnings else "pass"
    return GatekeeperResult(
        status=status,
        failed_rules=sorted({issue.rule for issue in errors}),
        errors=errors,
        warnings=warnings,
    )


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
