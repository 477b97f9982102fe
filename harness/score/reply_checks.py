"""The rules that compare what a system persisted with the verifier reply its model gave (INTERPRETATION §5, §7).

A conformance kit knows the reply: it scripted it. These pure functions read the persisted
`verifier_evaluation` as the SUT wrote it (raw JSON, so a boolean is not taken for a number) and the
reply as the spec's one parser reads it (`harness.system.reply`), and judge meaning, not shape: numbers
by value, lists the spec sets no order in by key, adjustments counted, their fields beyond `reason` free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.run.meaning import is_number, json_text, same_number
from harness.system.models import Claim, EvidenceRef, TraceEntry, VerifierCall, VerifierReply
from harness.system.reply import parse_verifier_reply

VERIFIER_STRINGS = ("model", "prompt_version")
"""The §7 verifier fields that are non-empty strings (PROTOCOL.md names them)."""


def model_reply(raw_reply: str | None) -> VerifierReply | None:
    """The scripted reply as the spec reads it (§5 step 2): the contract object, or None when it is not one."""
    if raw_reply is None:
        return None
    reply, _status = parse_verifier_reply(VerifierCall(raw_reply=raw_reply, model="kit"))
    return reply


def reply_problems(
    stored: Mapping[str, Any],
    reply: VerifierReply | None,
    claims: Sequence[Claim],
    parse_valid: bool,
    trace: Sequence[TraceEntry] = (),
) -> list[str]:
    """Every rule that ties the persisted evaluation to the model's reply and the trace summary (empty: all hold)."""
    return [
        *groundedness_problems(stored, reply),
        *adjustment_problems(stored, reply, claims, parse_valid),
        *model_ref_problems(stored, reply, claims, parse_valid),
        *filled_ref_problems(stored, reply, claims, trace, parse_valid),
        *binding_cover_problems(stored, reply, claims, parse_valid),
        *verifier_block_problems(stored),
    ]


def groundedness_problems(stored: Mapping[str, Any], reply: VerifierReply | None) -> list[str]:
    """§7: the persisted `groundedness_score` is a number or null, and the model's score when its reply is valid."""
    score = stored.get("groundedness_score")
    if score is not None and not is_number(score):
        return [f"groundedness_score is {json_text(score)}, not a number"]
    if reply is not None and not same_number(score, reply.groundedness_score):
        return [f"groundedness_score is {json_text(score)}; the model replied {json_text(reply.groundedness_score)}"]
    return []


def changed_checks(stored: Mapping[str, Any], reply: VerifierReply, claims: Sequence[Claim]) -> int:
    """How many claim checks §5 step 3 changed: dropped (unknown claim), added (no check) or reclassified."""
    known = {c.claim_id for c in claims}
    given = Counter(c.claim_id for c in reply.claim_checks)
    dropped = sum(n for cid, n in given.items() if cid not in known)
    persisted = {c.get("claim_id"): c.get("verification") for c in _objects(stored.get("claim_checks"))}
    modelled = {c.claim_id: c.verification.value for c in reply.claim_checks if given[c.claim_id] == 1}
    changed = sum(
        1
        for cid in known
        if given[cid] == 0 or (cid in modelled and cid in persisted and persisted[cid] != modelled[cid])
    )
    return dropped + changed


def adjustment_problems(
    stored: Mapping[str, Any], reply: VerifierReply | None, claims: Sequence[Claim], parse_valid: bool
) -> list[str]:
    """§5: each sanitised check (step 3) and a changed verdict are recorded, each as an object with a reason.

    Counted, not shaped: at least one adjustment per changed check and one when the verdict differs from the
    model's; what else an adjustment holds is the implementation's."""
    adjustments = stored.get("adjustments")
    if not isinstance(adjustments, list):
        return ["adjustments is not a list"]
    out = [f"adjustments[{i}] has no reason" for i, a in enumerate(adjustments) if not _has_reason(a)]
    checks = changed_checks(stored, reply, claims) if reply is not None and parse_valid else 0
    verdict = 1 if stored.get("verdict") != stored.get("model_verdict") else 0
    if len(adjustments) < checks + verdict:
        out.append(
            f"{len(adjustments)} adjustments recorded; the spec records one per sanitised claim check ({checks})"
            + (" and one for the changed verdict" if verdict else "")
        )
    return out


def model_ref_problems(
    stored: Mapping[str, Any], reply: VerifierReply | None, claims: Sequence[Claim], parse_valid: bool
) -> list[str]:
    """§7: every evidence ref the model gave for a claim is kept (completed, never replaced)."""
    if reply is None or not parse_valid:
        return []
    known = {c.claim_id for c in claims}
    given = Counter(c.claim_id for c in reply.claim_checks)
    persisted = {c.get("claim_id"): _objects(c.get("evidence_refs")) for c in _objects(stored.get("claim_checks"))}
    out: list[str] = []
    for check in reply.claim_checks:
        if check.claim_id not in known or given[check.claim_id] != 1 or check.claim_id not in persisted:
            continue
        for ref in check.evidence_refs:
            if (ref.trace_ref or ref.source_invocation_ids) and not any(
                _keeps(kept, ref.trace_ref, ref.source_invocation_ids) for kept in persisted[check.claim_id]
            ):
                out.append(
                    f"claims.{check.claim_id}: the model's evidence ref {json_text(ref.model_dump(exclude_none=True))} was not kept"
                )
    return out


def filled_ref_problems(
    stored: Mapping[str, Any],
    reply: VerifierReply | None,
    claims: Sequence[Claim],
    trace: Sequence[TraceEntry],
    parse_valid: bool,
) -> list[str]:
    """§7: every ref keeps the fields "that are available, filled from the trace summary where the model left them
    out", and §5 step 3 completes refs from the claim's bindings. So a persisted ref whose trace_ref names a trace
    entry holds a tool name and invocation ids that one of those sources gave for it (the model's ref, a binding
    of the claim, or the entry itself): never one none of them had."""
    entries = {e.trace_ref: e for e in trace}
    sources: dict[str, list[EvidenceRef]] = {c.claim_id: list(c.evidence_bindings) for c in claims}
    if reply is not None and parse_valid:
        counts = Counter(c.claim_id for c in reply.claim_checks)
        for c in reply.claim_checks:
            if counts[c.claim_id] == 1:
                sources.setdefault(c.claim_id, []).extend(c.evidence_refs)
    out: list[str] = []
    for check in _objects(stored.get("claim_checks")):
        cid = check.get("claim_id")
        for ref in _objects(check.get("evidence_refs")):
            entry = entries.get(ref.get("trace_ref"))  # type: ignore[arg-type]
            if entry is None:
                continue
            ids = ref.get("source_invocation_ids")
            ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
            found: list[EvidenceRef] = [
                EvidenceRef(
                    trace_ref=entry.trace_ref,
                    tool_name=entry.tool_name,
                    source_invocation_ids=entry.source_invocation_ids,
                ),
                *(
                    r
                    for r in sources.get(cid, [])  # type: ignore[arg-type]
                    if r.trace_ref == entry.trace_ref or set(r.source_invocation_ids) & set(ids)
                ),
            ]
            names = {r.tool_name for r in found if r.tool_name}
            if ref.get("tool_name") not in names:
                out.append(
                    f"claims.{cid}: evidence ref {entry.trace_ref} has tool_name {json_text(ref.get('tool_name'))}; the trace "
                    f"summary, the model and the bindings give {json_text(sorted(names))}"
                )
            available = {i for r in found for i in r.source_invocation_ids}
            if not set(ids) <= available:
                out.append(
                    f"claims.{cid}: evidence ref {entry.trace_ref} has source_invocation_ids {json_text(ids)}; the trace summary, "
                    f"the model and the bindings give {json_text(sorted(available))}"
                )
    return out


def binding_cover_problems(
    stored: Mapping[str, Any], reply: VerifierReply | None, claims: Sequence[Claim], parse_valid: bool
) -> list[str]:
    """§5 step 3: a check whose model gave no refs (or no check) is completed from *every* binding of its claim,
    not only the first: each binding has a persisted ref with its `trace_ref`, or sharing one of its ids, or
    (a binding with neither) its tool name."""
    if not parse_valid:
        return []
    given = {c.claim_id for c in reply.claim_checks if c.evidence_refs} if reply is not None else set()
    persisted = {c.get("claim_id"): _objects(c.get("evidence_refs")) for c in _objects(stored.get("claim_checks"))}
    out: list[str] = []
    for claim in claims:
        if claim.claim_id in given or claim.claim_id not in persisted:
            continue
        refs = persisted[claim.claim_id]
        for index, binding in enumerate(claim.evidence_bindings):
            if not any(_covers(ref, binding) for ref in refs):
                shown = json_text(binding.model_dump(exclude_none=True))
                out.append(
                    f"claims.{claim.claim_id}: evidence binding {index} {shown} has no evidence ref; refs completed "
                    f"from the bindings cover every binding ({len(claim.evidence_bindings)}), not only the first"
                )
    return out


def _covers(ref: Mapping[str, Any], binding: EvidenceRef) -> bool:
    ids = ref.get("source_invocation_ids")
    ids = set(ids) if isinstance(ids, list) and all(isinstance(i, str) for i in ids) else set()
    if binding.trace_ref and ref.get("trace_ref") == binding.trace_ref:
        return True
    if ids & set(binding.source_invocation_ids):
        return True
    return not binding.trace_ref and not binding.source_invocation_ids and ref.get("tool_name") == binding.tool_name


def verifier_block_problems(stored: Mapping[str, Any]) -> list[str]:
    """§7: the verifier's model and prompt version (non-empty strings), latency (a non-negative number of
    milliseconds) and token usage (an object of non-negative integer counts): present and typed, values free."""
    block = stored.get("verifier")
    if not isinstance(block, Mapping):
        return ["verifier is not an object"]
    out = [
        f"verifier.{k} is {json_text(block.get(k))}, not a non-empty string"
        for k in VERIFIER_STRINGS
        if not _text(block.get(k))
    ]
    latency = block.get("latency_ms")
    if not is_number(latency) or latency < 0:
        out.append(f"verifier.latency_ms is {json_text(latency)}, not a non-negative number")
    usage = block.get("usage")
    if not isinstance(usage, Mapping) or not all(_count(v) for v in usage.values()):
        out.append(f"verifier.usage is {json_text(usage)}, not an object of token counts")
    return out


def _keeps(kept: Mapping[str, Any], trace_ref: str | None, ids: Sequence[str]) -> bool:
    kept_ids = kept.get("source_invocation_ids")
    kept_ids = kept_ids if isinstance(kept_ids, list) else []
    return (trace_ref is None or kept.get("trace_ref") == trace_ref) and set(ids) <= set(kept_ids)


def _objects(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _has_reason(adjustment: Any) -> bool:
    return isinstance(adjustment, Mapping) and _text(adjustment.get("reason"))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _count(value: Any) -> bool:
    return is_number(value) and float(value) >= 0 and float(value).is_integer()
