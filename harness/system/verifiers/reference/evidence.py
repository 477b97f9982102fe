"""What a claim may be judged on: the trace entries its bindings resolve to, read once per call.

A binding counts only when it points at a real entry of this session's trace
under the tool it names; an entry whose call ended in error is not support; a
claim the gatekeeper flagged under `evidence.invocation_ref` has no usable
evidence at all. Tool output is data: sentences in it that address the
verifier are dropped before anything is matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from harness.system.gatekeeper import INVOCATION_REF
from harness.system.models import Claim, EvidenceBinding, EvidenceRef, GatekeeperResult, TraceEntry
from harness.system.trace import complete_ref
from harness.system.verifiers.reference.cues import strip_injection
from harness.system.verifiers.reference.extract import Features, features
from harness.system.verifiers.reference.text import fold_phrases, stems

MAX_LINES = 200


@dataclass(eq=False)
class EntryView:
    """One trace entry, cleaned of injected instructions and pre-extracted; its lines on demand."""

    entry: TraceEntry
    text: str
    lower: str
    folded: str
    injected: int
    stems: frozenset[str]
    feats: Features

    @cached_property
    def lines(self) -> list[tuple[str, Features]]:
        """Each non-empty line, lower-cased, with the features found on it: for row checks of tables and logs."""
        out: list[tuple[str, Features]] = []
        start = 0
        for line in self.text.split("\n")[:MAX_LINES]:
            end = start + len(line)
            if line.strip():
                out.append((line.lower(), _slice(self.feats, start, end)))
            start = end + 1
        return out


def _slice(feats: Features, start: int, end: int) -> Features:
    return Features(
        tuple(m for m in feats.mentions if start <= m.start < end),
        tuple(q for q in feats.quantities if start <= q.start < end),
        tuple(t for t in feats.times if start <= t.start < end),
    )


@dataclass(frozen=True)
class ClaimEvidence:
    """The usable entries for one claim, its evidence refs, and why other bindings did not count."""

    usable: tuple[EntryView, ...]
    refs: tuple[EvidenceRef, ...]
    problems: tuple[str, ...]

    @property
    def labels(self) -> str:
        return "+".join(v.entry.trace_ref for v in self.usable) or "the cited evidence"


def view_entry(entry: TraceEntry) -> EntryView:
    text, injected = strip_injection(entry.result_excerpt)
    return EntryView(
        entry=entry,
        text=text,
        lower=text.lower(),
        folded=fold_phrases(text).lower(),
        injected=injected,
        stems=frozenset(stems(text)),
        feats=features(text),
    )


def resolve_binding(binding: EvidenceBinding, trace: Sequence[TraceEntry]) -> tuple[list[TraceEntry], str | None]:
    """The entries a binding points at, or the reason it points nowhere valid."""
    if binding.source_invocation_ids:
        found: list[TraceEntry] = []
        for inv_id in binding.source_invocation_ids:
            entry = next((e for e in trace if inv_id in e.source_invocation_ids), None)
            if entry is None:
                return [], f"{inv_id} is not an invocation of this session"
            if binding.tool_name and entry.tool_name != binding.tool_name:
                return [], f"{inv_id} was a {entry.tool_name} call, the binding says {binding.tool_name}"
            if entry not in found:
                found.append(entry)
        return found, None
    entry = next((e for e in trace if e.trace_ref == binding.trace_ref), None)
    if entry is None:
        return [], f"{binding.trace_ref or 'a binding'} is not in the trace summary"
    if binding.tool_name and entry.tool_name != binding.tool_name:
        return [], f"{entry.trace_ref} is a {entry.tool_name} call, the binding says {binding.tool_name}"
    return [entry], None


def claim_evidence(
    claim: Claim, trace: Sequence[TraceEntry], views: dict[str, EntryView], gatekeeper: GatekeeperResult
) -> ClaimEvidence:
    """Resolve every binding of the claim; keep the entries that can support it.

    `views` memoises the extraction of each entry within one verifier call.
    """
    refs = tuple(complete_ref(EvidenceRef(**b.model_dump()), trace) for b in claim.evidence_bindings)
    if not claim.evidence_bindings:
        return ClaimEvidence((), refs, ("the claim cites no evidence",))
    if any(e.rule == INVOCATION_REF and e.claim_id == claim.claim_id for e in gatekeeper.errors):
        reasons = [e.message for e in gatekeeper.errors if e.rule == INVOCATION_REF and e.claim_id == claim.claim_id]
        return ClaimEvidence((), refs, tuple(reasons))
    usable: list[EntryView] = []
    problems: list[str] = []
    for binding in claim.evidence_bindings:
        entries, problem = resolve_binding(binding, trace)
        if problem:
            problems.append(problem)
        for entry in entries:
            if entry.status == "error":
                problems.append(f"{entry.trace_ref} ({entry.tool_name}) ended in error, which is not support")
            else:
                view = views.get(entry.trace_ref)
                if view is None:
                    view = views[entry.trace_ref] = view_entry(entry)
                if view not in usable:
                    usable.append(view)
    return ClaimEvidence(tuple(usable), refs, tuple(problems))
