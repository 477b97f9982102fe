"""What the labelling page shows of an imported session, as data: claims, their bindings resolved to the tool
results they cite with the cited excerpt marked, every tool call of the session whole, and the production
verifier's answer (shown only on request); which sessions each annotator is given; the claims annotators answered
differently, for adjudication.

Pure functions over the imported case and the label files' lines; the server (`labelling`) renders them with
autoescaping templates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.corpus.labels import ClaimKey, LabelLine
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
    unsure: bool = False
    comment: str = ""


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation of the session, whole: what the executor saw, cited or not."""

    id: str
    tool_name: str
    arguments: str
    status: str
    result: str
    cited: bool


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
    tools: list[ToolCall] = field(default_factory=list)

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


def case_view(case: Imported, answers: Mapping[ClaimKey, LabelLine]) -> CaseView:
    """The page's data; `answers`: the annotator's last line per claim (label, unsure, comment)."""
    prepared = case.prepared()
    rows = {inv.id: inv for inv in case.session.tool_invocations}
    production = case.production
    checks = {c.claim_id: c for c in production.claim_checks}

    def one(claim: Claim) -> ClaimView:
        check = checks.get(claim.claim_id)
        answer = answers.get((case.id, claim.claim_id))
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
            label=answer.label if answer else None,
            production=check.verification.value if check else None,
            production_detail=check.detail if check else "",
            unsure=answer.unsure if answer else False,
            comment=answer.comment if answer else "",
        )

    cited_ids = {i for c in prepared.claims for b in c.evidence_bindings for e in cited_entries(b, prepared.trace)
                 for i in e.source_invocation_ids}  # fmt: skip
    tools = [
        ToolCall(
            inv.id,
            inv.tool_name,
            json.dumps(inv.arguments, ensure_ascii=False, sort_keys=True),
            inv.status,
            inv.result,
            inv.id in cited_ids,
        )
        for inv in case.session.tool_invocations
    ]
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
        tools=tools,
    )


def current_claim(view: CaseView, after: str | None) -> str | None:
    """The claim the keys 1-6 label: the first unlabelled one after `after`, else the first unlabelled one; None
    when every claim is labelled (a further key must not relabel the last one: the page moves on instead)."""
    ids = [c.claim_id for c in view.claims]
    open_ = [c.claim_id for c in view.claims if c.label is None]
    if after in ids:
        later = [cid for cid in open_ if ids.index(cid) > ids.index(after)]
        if later:
            return later[0]
    return open_[0] if open_ else None


def assignment(case_ids: Sequence[str], roster: Sequence[str], overlap: float, seed: int = 0) -> dict[str, list[str]]:
    """Which sessions each annotator of `roster` labels, in the order given: a share `overlap` of the sessions
    (rounded, at least one when overlap > 0 and there are two annotators) goes to everyone, so their agreement
    can be measured; the rest are dealt out in turn, each to one annotator. The choice hashes the session ids
    with `seed`, so it is the same on every restart and does not depend on the order sessions were imported."""
    if not roster:
        return {}
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap {overlap}: a share between 0 and 1")

    def rank(cid: str) -> str:
        return hashlib.sha256(f"{seed}:{cid}".encode()).hexdigest()

    ranked = sorted(case_ids, key=rank)
    shared_n = round(overlap * len(ranked))
    if overlap > 0 and len(roster) > 1 and ranked:
        shared_n = max(1, shared_n)
    shared = set(ranked[:shared_n])
    dealt = {cid: roster[i % len(roster)] for i, cid in enumerate(ranked[shared_n:])}
    return {name: [c for c in case_ids if c in shared or dealt.get(c) == name] for name in roster}


@dataclass(frozen=True)
class Dispute:
    """A claim the annotators answered differently (or one marked unsure), for the adjudication screen."""

    case_id: str
    claim_id: str
    statement: str
    answers: list[tuple[str, str, bool, str]]
    """(annotator, label, unsure, comment), by annotator."""
    adjudicated: str | None
    reason: str


def disputes(
    cases: Mapping[str, Imported], by_annotator: Mapping[str, Mapping[ClaimKey, LabelLine]],
    adjudicated: Mapping[ClaimKey, Derivability],
) -> list[Dispute]:  # fmt: skip
    """Claims with two or more different labels, or a label marked unsure, unsettled first, then by case and
    claim; the export (`score.label_export`) takes the adjudicated label where one is given."""
    out = []
    for case_id, case in cases.items():
        for claim in case.prepared().claims:
            key = (case_id, claim.claim_id)
            given = [(n, a[key]) for n, a in sorted(by_annotator.items()) if key in a and a[key].label is not None]
            labels = {line.label for _, line in given}
            unsure = [n for n, line in given if line.unsure]
            if len(labels) < 2 and not unsure:
                continue
            reason = f"{len(labels)} different labels" if len(labels) > 1 else f"marked unsure by {', '.join(unsure)}"
            answers = [(n, line.label.value if line.label else "", line.unsure, line.comment) for n, line in given]
            done = adjudicated.get(key)
            out.append(Dispute(case_id, claim.claim_id, claim.statement, answers, done.value if done else None, reason))
    return sorted(out, key=lambda d: (d.adjudicated is not None, d.case_id, d.claim_id))
