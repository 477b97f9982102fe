"""The `tool_trace_summary`: one entry per invocation of the session, in order."""

from __future__ import annotations

from collections.abc import Sequence

from harness.system.models import EvidenceBinding, EvidenceRef, ToolInvocation, TraceEntry

DEFAULT_EXCERPT_CHARS = 2000
"""Result excerpt limit; evidence beyond it cannot be observed by the verifier."""


def trace_ref(position: int) -> str:
    """The `trace_ref` a built summary gives the session's `position`-th invocation, counted from 1 (§7)."""
    return f"T{position}"


def build_trace_summary(
    invocations: Sequence[ToolInvocation], excerpt_chars: int = DEFAULT_EXCERPT_CHARS
) -> list[TraceEntry]:
    """Number the session's invocations T1, T2, ... and cut each result to the limit."""
    return [
        TraceEntry(
            trace_ref=trace_ref(index),
            tool_name=inv.tool_name,
            source_invocation_ids=[inv.id],
            status=inv.status,
            result_excerpt=inv.result[:excerpt_chars],
            truncated=len(inv.result) > excerpt_chars,
        )
        for index, inv in enumerate(invocations, start=1)
    ]


def session_trace_summary(
    given: Sequence[TraceEntry] | None,
    invocations: Sequence[ToolInvocation],
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> list[TraceEntry]:
    """The session's trace summary (§7): the one given with the session, else built from its invocations."""
    return list(given) if given is not None else build_trace_summary(invocations, excerpt_chars)


def find_trace_entry(trace: Sequence[TraceEntry], ref: EvidenceRef | EvidenceBinding) -> TraceEntry | None:
    """The trace entry a reference points at: by trace_ref first, else by invocation id."""
    if ref.trace_ref:
        for entry in trace:
            if entry.trace_ref == ref.trace_ref:
                return entry
    for inv_id in ref.source_invocation_ids:
        for entry in trace:
            if inv_id in entry.source_invocation_ids:
                return entry
    return None


def complete_ref(ref: EvidenceRef, trace: Sequence[TraceEntry]) -> EvidenceRef:
    """Fill a reference's missing trace_ref, tool_name and ids from the trace summary.

    What the model or executor gave is kept; only absent fields are filled.
    """
    entry = find_trace_entry(trace, ref)
    if entry is None:
        return ref
    return EvidenceRef(
        trace_ref=ref.trace_ref or entry.trace_ref,
        tool_name=ref.tool_name or entry.tool_name,
        source_invocation_ids=ref.source_invocation_ids or list(entry.source_invocation_ids),
    )
