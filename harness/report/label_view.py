"""What the labelling page shows of an imported session, as data: claims, their bindings resolved to the tool
results they cite with the cited excerpt marked, and the production verifier's answer (shown only on request).

Pure functions over the imported case; the server (`labelling`) renders them with autoescaping templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.corpus.labels import ClaimKey
from harness.corpus.sessions import Imported
from harness.system.models import Claim, Derivability, EvidenceBinding, ToolInvocation, TraceEntry
from harness.system.policy import binding_resolves


@dataclass(frozen=True)
class Cited:
    """One tool result a binding points at: the text before, inside and after the cited excerpt."""

    trace_ref: str
    tool_name: str
    invocation_ids: list[str]
    status: str
    before: str
    excerpt: str
    after: str


@dataclass(frozen=True)
class BindingView:
    text: str
    resolves: bool
    cited: list[Cited]


@dataclass(frozen=True)
class ClaimView:
    claim_id: str
    statement: str
    status: str
    critical: bool
    bindings: list[BindingView]
    label: Derivability | None
    production: str | None
    production_detail: str


@dataclass(frozen=True)
class CaseView:
    id: str
    title: str
    question: str
    final_answer: str
    claims: list[ClaimView]
    production_verdict: str | None
    parse_status: str
    gatekeeper: str
    notes: list[str] = field(default_factory=list)

    @property
    def labelled(self) -> int:
        return sum(1 for c in self.claims if c.label is not None)


def claim_ids(case: Imported) -> list[str]:
    """The claims a person labels: the executor's structured claims, as the system reads them."""
    return [c.claim_id for c in case.prepared().claims]


def split_excerpt(result: str, excerpt: str) -> tuple[str, str, str]:
    """(before, excerpt, after) of a tool result around the excerpt the verifier saw (all of it when absent)."""
    if excerpt and (at := result.find(excerpt)) >= 0:
        return result[:at], excerpt, result[at + len(excerpt) :]
    stem = excerpt.rstrip(".… \n")
    if stem and result.startswith(stem):
        return "", stem, result[len(stem) :]
    return "", result or excerpt, ""


def cited_entries(binding: EvidenceBinding, trace: list[TraceEntry]) -> list[TraceEntry]:
    """The trace entries a binding names: by invocation id, or by trace_ref when it gives no ids."""
    ids = set(binding.source_invocation_ids)
    return [e for e in trace if (ids & set(e.source_invocation_ids) if ids else e.trace_ref == binding.trace_ref)]


def _binding_text(b: EvidenceBinding) -> str:
    parts = [p for p in (b.trace_ref, b.tool_name) if p] + list(b.source_invocation_ids)
    return " · ".join(parts) or "(empty binding)"


def _cited(entry: TraceEntry, rows: dict[str, ToolInvocation]) -> Cited:
    row = next((rows[i] for i in entry.source_invocation_ids if i in rows), None)
    before, excerpt, after = split_excerpt(row.result if row else entry.result_excerpt, entry.result_excerpt)
    return Cited(
        entry.trace_ref, entry.tool_name, list(entry.source_invocation_ids), entry.status, before, excerpt, after
    )


def case_view(case: Imported, labels: dict[ClaimKey, Derivability]) -> CaseView:
    prepared = case.prepared()
    rows = {inv.id: inv for inv in case.session.tool_invocations}
    production = case.production
    checks = {c.claim_id: c for c in production.claim_checks}

    def one(claim: Claim) -> ClaimView:
        check = checks.get(claim.claim_id)
        bindings = [
            BindingView(
                text=_binding_text(b),
                resolves=binding_resolves(b, prepared.invocations, prepared.trace),
                cited=[_cited(e, rows) for e in cited_entries(b, prepared.trace)],
            )
            for b in claim.evidence_bindings
        ]
        return ClaimView(
            claim_id=claim.claim_id,
            statement=claim.statement,
            status=claim.status,
            critical=claim.critical,
            bindings=bindings,
            label=labels.get((case.id, claim.claim_id)),
            production=check.verification.value if check else None,
            production_detail=check.detail if check else "",
        )

    notes = []
    if prepared.parsed.parse_status.status != "valid":
        notes.append(f"the structured output is {prepared.parsed.parse_status.status}: no claims to label")
    return CaseView(
        id=case.id,
        title=case.title,
        question=case.session.question,
        final_answer=case.executor.final_answer,
        claims=[one(c) for c in prepared.claims],
        production_verdict=production.verdict.value if production.verdict else None,
        parse_status=prepared.parsed.parse_status.status,
        gatekeeper=prepared.gatekeeper.status,
        notes=notes,
    )


def current_claim(view: CaseView, after: str | None) -> str | None:
    """The claim the keys 1-6 label: the first unlabelled one after `after`, else the first unlabelled, else
    `after` itself (to relabel it), else the first."""
    ids = [c.claim_id for c in view.claims]
    open_ = [c.claim_id for c in view.claims if c.label is None]
    if after in ids:
        later = [cid for cid in open_ if ids.index(cid) > ids.index(after)]
        if later:
            return later[0]
    if open_:
        return open_[0]
    return after if after in ids else (ids[0] if ids else None)
