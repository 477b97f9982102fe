"""Executor-output parser: raw text in, `executor_output_parse_status` out, and the one typed reading of the
claims and their bindings (`ExecutorOutput`) that every layer uses.

Broken JSON is never repaired (INTERPRETATION §2): what `json.loads` does not
accept is `malformed`. Full V2 conformance is the gatekeeper's job; the claims are read leniently here and
each item keeps what the gatekeeper needs to judge its form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.system import strictjson
from harness.system.models import (
    BindingEntry,
    Claim,
    ClaimEntry,
    EvidenceBinding,
    ExecutorOutput,
    ParsedExecutorOutput,
    ParseStatus,
)

_FENCED_JSON = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.DOTALL)


def parse_structured_output(raw: str | None) -> ParsedExecutorOutput:
    """Classify what the executor emitted as `valid`, `missing` or `malformed`."""
    if raw is None or not raw.strip():
        return _status("missing", "the executor emitted no structured output")
    try:
        value = strictjson.loads(raw)
    except (ValueError, RecursionError) as exc:
        return _status("malformed", f"not JSON: {exc}")
    return parse_structured_value(value)


def parse_structured_value(value: Any) -> ParsedExecutorOutput:
    """Classify an already decoded structured output (an object with a `claims` list is `valid`)."""
    if not isinstance(value, dict):
        return _status("malformed", f"not a JSON object but {type(value).__name__}")
    if not isinstance(value.get("claims"), list):
        return _status("malformed", "no readable `claims` list")
    return ParsedExecutorOutput(parse_status=ParseStatus(status="valid"), structured=value)


# --- the claims, read once ----------------------------------------------------------


def executor_output(parsed: ParsedExecutorOutput) -> ExecutorOutput:
    """The typed reading of a parsed output: every claims item with its validity, and the policy's claims."""
    entries = claim_entries(parsed.structured) if parsed.parse_status.status == "valid" else []
    return ExecutorOutput(parsed=parsed, entries=tuple(entries), claims=[_claim(e) for e in entries if e.first])


def output_of(structured: Any) -> ExecutorOutput:
    """`executor_output` of a structured output given as an object (a case body's `structured_output`); its
    entries are the body's own items, so a generator or perturbation may edit them in place."""
    return executor_output(parse_structured_value(structured))


def claim_entries(structured: Mapping[str, Any] | None) -> list[ClaimEntry]:
    """Every item of `structured["claims"]` (none when it is not a list), each with its id when it is an object
    with a string `claim_id`, whether it is the first with that id, and its binding objects."""
    items = structured.get("claims") if structured is not None else None
    entries: list[ClaimEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(items if isinstance(items, list) else []):
        cid = item.get("claim_id") if isinstance(item, dict) else None
        cid = cid if isinstance(cid, str) else None
        first = cid is not None and cid not in seen
        seen.update([cid] if cid is not None else [])
        bindings = tuple(BindingEntry(path=p, raw=b, well_typed=t) for p, b, t in claim_bindings(item))
        entries.append(ClaimEntry(index=index, raw=item, claim_id=cid, first=first, bindings=bindings))
    return entries


def claim_bindings(claim: Any) -> list[tuple[str, dict[str, Any], bool]]:
    """(path suffix, binding, well typed) for every binding object a claim names.

    The one reader of `evidence_bindings` for the gatekeeper and the policy (§3): a single object given
    instead of a list is still a binding (mistyped, so it never resolves) and its ids are still checked.
    """
    bindings = claim.get("evidence_bindings") if isinstance(claim, Mapping) else None
    if isinstance(bindings, dict):
        return [("", bindings, False)]  # mistyped: a binding, but never one that resolves
    if not isinstance(bindings, list):
        return []
    return [(f"[{bi}]", b, _ids_typed(b)) for bi, b in enumerate(bindings) if isinstance(b, dict)]


def _ids_typed(binding: Mapping[str, Any]) -> bool:
    """`source_invocation_ids` is absent, null or a list: a bare value is mistyped (and never resolves)."""
    ids = binding.get("source_invocation_ids")
    return ids is None or isinstance(ids, list)


def binding_invocation_ids(binding: Mapping[str, Any]) -> list[str]:
    """The ids a binding names, whatever their type (§3): a list's items, or a bare value as one id.

    A value that is not a string becomes an id no row can have; absent or null names none.
    """
    ids = binding.get("source_invocation_ids")
    if ids is None:
        return []
    return [as_invocation_id(i) for i in (ids if isinstance(ids, list) else [ids])]


def as_invocation_id(value: Any) -> str:
    """Invocation ids are strings; `101` is not a row of the session (§3), whatever row "101" exists."""
    return value if isinstance(value, str) else f"<not a string: {value!r}>"


def _claim(entry: ClaimEntry) -> Claim:
    """The policy's reading of a claim item: `critical` counts only when it is literally `true`."""
    raw = entry.raw
    return Claim(
        claim_id=entry.claim_id or "",
        statement=raw["statement"] if isinstance(raw.get("statement"), str) else "",
        status=raw["status"] if isinstance(raw.get("status"), str) else "",
        critical=raw.get("critical") is True,
        evidence_bindings=[_binding(b.raw, b.well_typed) for b in entry.bindings],
    )


def _binding(raw: dict[str, Any], well_typed: bool) -> EvidenceBinding:
    return EvidenceBinding(
        trace_ref=raw["trace_ref"] if isinstance(raw.get("trace_ref"), str) and raw["trace_ref"] else None,
        tool_name=raw["tool_name"] if isinstance(raw.get("tool_name"), str) and raw["tool_name"] else None,
        source_invocation_ids=binding_invocation_ids(raw),
        well_typed=well_typed,
    )


def split_combined_message(message: str) -> tuple[str, str | None]:
    """Split one executor message into (prose, structured-output text or None).

    The structured output is the *last* fenced json block after the prose; the
    prose is everything before it. A message with no fenced block has none.
    """
    matches = list(_FENCED_JSON.finditer(message))
    if not matches:
        return message.strip(), None
    last = matches[-1]
    return message[: last.start()].strip(), last.group(1)


def parse_combined_message(message: str) -> tuple[str, ParsedExecutorOutput]:
    """Parse a prose answer followed by a fenced json block."""
    prose, raw = split_combined_message(message)
    return prose, parse_structured_output(raw)


def _status(status: str, reason: str) -> ParsedExecutorOutput:
    return ParsedExecutorOutput(parse_status=ParseStatus(status=status, reason=reason))  # type: ignore[arg-type]
