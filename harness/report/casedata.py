"""The per-case drill-down data the page embeds: pure builders from a result record and its case.

Everything here ends up inside a `<script type="application/json">` block
written with `|tojson` and is put on the page with `textContent` only, so
case text and model replies are always shown as text. Long texts are cut
(saying how much was left out); the full text stays in the run folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from jinja2.utils import htmlsafe_json_dumps
from pydantic_core import to_json

from harness.report.analyses import quality_mismatches, record_dict_outcome
from harness.score.outcome import CATEGORY_NAMES, RIGHT, Outcome, is_failure
from harness.system.models import ExecutorOutput

if TYPE_CHECKING:
    from harness.score.summary_model import ConformanceFailure

TOOL_RESULT_LIMIT = 3000
REPLY_LIMIT = 8000
STRUCTURED_LIMIT = 4000
ANSWER_LIMIT = 2000


def clip(text: Any, limit: int) -> dict[str, Any]:
    """{"text", "more"}: the text cut at `limit` characters and how many were left out."""
    if text is None:
        return {"text": None, "more": 0}
    value = text if isinstance(text, str) else pretty_json(text)
    return {"text": value[:limit], "more": max(0, len(value) - limit)}


def pretty_json(value: Any) -> str:
    """`value` as indented JSON for a person to read (the standard library's indenting encoder is pure Python and
    was a quarter of a report's drill-down; pydantic-core's is not). A value JSON has no form for is shown as
    its text (bytes in base64)."""
    try:
        return to_json(value, indent=1, fallback=str, bytes_mode="base64").decode()
    except ValueError:  # pydantic-core's serialisation error
        return str(value)


def _binding_text(binding: Any) -> str:
    if not isinstance(binding, Mapping):
        return str(binding)
    ids = binding.get("source_invocation_ids")
    parts = [str(binding.get("trace_ref") or ""), str(binding.get("tool_name") or "")]
    if isinstance(ids, list) and ids:
        parts.append(", ".join(str(i) for i in ids))
    return " · ".join(p for p in parts if p)


def case_payload(case: Mapping[str, Any], output: ExecutorOutput | None = None) -> dict[str, Any]:
    """What a person needs to judge a case: question, tool evidence, the executor's answer and claims.

    `output`: the executor output as the system's parser read it (`Case.executor_output`), whose claim objects
    are shown; None when there is no case to read it from (an invalid output shows no claims either). The text shown is what the case gave, either way: its
    `structured_output_raw` as written, or its `structured_output` object serialised.
    """
    session = case.get("session") or {}
    executor = case.get("executor") or {}
    given = executor.get("structured_output")
    structured_text = pretty_json(given) if given is not None else executor.get("structured_output_raw")
    return {
        "id": case.get("id"),
        "title": case.get("title"),
        "question": session.get("question"),
        "tools": [
            {
                "id": inv.get("id"),
                "tool": inv.get("tool_name"),
                "status": inv.get("status", "success"),
                "args": json.dumps(inv.get("arguments") or {}, ensure_ascii=False),
                "result": clip(inv.get("result", ""), TOOL_RESULT_LIMIT),
            }
            for inv in session.get("tool_invocations") or []
            if isinstance(inv, Mapping)
        ],
        "other_sessions": [s.get("id") for s in session.get("other_sessions") or [] if isinstance(s, Mapping)],
        "final_answer": clip(executor.get("final_answer"), ANSWER_LIMIT),
        "structured": clip(structured_text, STRUCTURED_LIMIT),
        "claims": {
            str(c.get("claim_id")): {
                "statement": c.get("statement") if isinstance(c.get("statement"), str) else json.dumps(c.get("statement")),
                "status": c.get("status"),
                "critical": c.get("critical"),
                "bindings": [_binding_text(b) for b in c.get("evidence_bindings") or []] if isinstance(c.get("evidence_bindings"), list) else [],
            }
            for c in (output.objects if output is not None else [])
        },
        "meta": {k: v for k, v in (case.get("meta") or {}).items() if isinstance(v, str | int | float)},
    }  # fmt: skip


def _evaluation(record: Mapping[str, Any]) -> Mapping[str, Any]:
    persisted = record.get("persisted") or {}
    ev = persisted.get("verifier_evaluation") if isinstance(persisted, Mapping) else None
    return ev if isinstance(ev, Mapping) else {}


def claim_rows(record: Mapping[str, Any], outcome: Outcome) -> list[dict[str, Any]]:
    """Every claim the executor made or the gold labels name: gold, predicted, right or wrong (by the record's
    `outcome`), the check's detail."""
    gold = (record.get("gold") or {}).get("claims") or {}
    predicted = record.get("claims") or {}
    checks = {c.get("claim_id"): c for c in _evaluation(record).get("claim_checks") or [] if isinstance(c, Mapping)}
    order = list(dict.fromkeys([*record.get("executor_claim_ids", []), *gold, *predicted]))
    critical = set(record.get("critical_claims") or [])
    wrong = set(outcome.claims_wrong)
    rows = []
    for cid in order:
        check = checks.get(cid) or {}
        refs = [_binding_text(r) for r in check.get("evidence_refs") or []]
        rows.append(
            {
                "id": cid,
                "gold": list(gold[cid]) if cid in gold else None,
                "pred": predicted.get(cid),
                "ok": None if cid not in gold else cid not in wrong,
                "critical": cid in critical,
                "detail": check.get("detail"),
                "refs": refs,
            }
        )
    return rows


def record_payload(
    index: int,
    run: str,
    record: Mapping[str, Any],
    cat: int,
    conformance: ConformanceFailure | None,
    title: str | None,
) -> dict[str, Any]:
    """One embedded result: the row's fields for filtering and everything the drill-down shows (`title`: its
    case's)."""
    ev = _evaluation(record)
    outcome = record_dict_outcome(record)
    gk = ev.get("gatekeeper_result") or record.get("gatekeeper") or {}
    gold = record.get("gold") or {}
    why = []
    if conformance:
        why += [f"conformance: {m}" for m in conformance.mismatches]
        why += [f"invariant: {m}" for m in conformance.invariant_violations]
    if record.get("kind") == "quality":
        why += quality_mismatches(record, outcome)
    elif record.get("error"):
        why.append(f"error: {record['error']}")
    usage = record.get("usage") or {}
    return {
        "i": index,
        "run": run,
        "case": record.get("case_id"),
        "title": title,
        "variant": record.get("variant"),
        "epoch": record.get("epoch"),
        "kind": record.get("kind"),
        "dataset": record.get("dataset"),
        "tags": list(record.get("tags") or []),
        "spec": list(record.get("spec") or []),
        "ok": not is_failure(cat),
        "cat": CATEGORY_NAMES[cat],
        "claims_wrong": len(outcome.claims_wrong) if cat != RIGHT else 0,
        "verdict": record.get("verdict"),
        "model_verdict": record.get("model_verdict"),
        "derived_verdict": record.get("derived_verdict"),
        "gold_verdict": list(gold.get("verdict") or []),
        "gold_model_verdict": gold.get("model_verdict"),
        "parse_status": record.get("parse_status"),
        "gold_parse_status": gold.get("parse_status"),
        "gatekeeper": {
            "status": gk.get("status"),
            "failed_rules": list(gk.get("failed_rules") or []),
            "errors": [_issue(e) for e in gk.get("errors") or []],
            "warnings": [_issue(w) if isinstance(w, Mapping) else {"rule": str(w)} for w in gk.get("warnings") or []],
        },
        "gold_gatekeeper": gold.get("gatekeeper"),
        "claims": claim_rows(record, outcome),
        "adjustments": [
            {k: a.get(k) for k in ("step", "reason", "claim_id", "from_verdict", "to_verdict")}
            for a in record.get("adjustments") or []
            if isinstance(a, Mapping)
        ],
        "reply_status": record.get("reply_status"),
        "invalid_reason": record.get("invalid_reason"),
        "raw_reply": clip(record.get("raw_reply"), REPLY_LIMIT),
        "rationale": ev.get("rationale"),
        "groundedness": ev.get("groundedness_score"),
        "trace": [
            {"ref": t.get("trace_ref"), "tool": t.get("tool_name"), "truncated": bool(t.get("truncated"))}
            for t in ev.get("tool_trace_summary") or []
            if isinstance(t, Mapping)
        ],
        "error": record.get("error"),
        "why": why,
        "latency_ms": record.get("latency_ms"),
        "tokens": usage.get("total_tokens"),
        "cached": record.get("cached"),
        "replayed": record.get("replayed"),
    }


def _issue(issue: Any) -> dict[str, Any]:
    if not isinstance(issue, Mapping):
        return {"rule": str(issue)}
    return {k: issue.get(k) for k in ("rule", "message", "claim_id", "path")}


def embedded_json(
    runs: Sequence[tuple[str, Iterable[tuple[int, Mapping[str, Any]]], Mapping[Any, Any], Mapping[str, Any]]],
) -> tuple[EmbeddedJSON, dict[str, Any]]:
    """All embedded records and the cases they refer to (each case once per run), as the page's JSON block,
    with the variants, tags and scenarios those records hold (the page's filters) and how many there are.

    `runs`: (run label, picked (category, record) pairs, conformance failures by key, `CaseShown` by case id).
    Each record is serialised as soon as it is built, and each case was when its view was made (`html_json`), so
    the page's data is held once, as text, not also as a tree of objects: the report's memory stays flat in what
    it embeds.
    """
    records: list[str] = []
    cases: dict[str, str] = {}
    found: dict[str, Any] = {"variants": set(), "tags": set(), "scenarios": set()}
    for run, picked, failures, payloads in runs:
        for cat, record in picked:
            key = (record.get("case_id"), record.get("variant"), int(record.get("epoch") or 0))
            case = payloads.get(str(record.get("case_id")))
            title = case.title if case is not None else None
            payload = record_payload(len(records), run, record, cat, failures.get(key), title)
            found["variants"].add(payload["variant"])
            found["tags"].update(payload["tags"])
            found["scenarios"].update(payload["spec"])
            records.append(html_json(payload))
            case_key = f"{run}::{record.get('case_id')}"
            if case is not None and case_key not in cases:
                cases[case_key] = f"{html_json(case_key)}: {case.json}"
    found["records"] = len(records)
    return EmbeddedJSON([cases[k] for k in sorted(cases)], records), found


class EmbeddedJSON:
    """The page's JSON block as its serialised pieces, written one after another (`pieces`), never joined into
    one string: the report's memory holds the data once. Every piece went through `htmlsafe_json_dumps`."""

    def __init__(self, cases: list[str], records: list[str]) -> None:
        self.cases, self.records = cases, records

    def pieces(self) -> Iterator[str]:
        yield '{"cases": {'
        for i, case in enumerate(self.cases):
            yield (", " if i else "") + case
        yield '}, "records": ['
        for i, record in enumerate(self.records):
            yield (", " if i else "") + record
        yield "]}"

    def __html__(self) -> str:
        return "".join(self.pieces())


def html_json(value: Any) -> str:
    """JSON safe inside an HTML script block, escaped as jinja's `tojson` escapes it (<, >, & and ' as \\u
    escapes), keys in the order given. pydantic-core's encoder is several times the standard library's, and the
    page's data is megabytes; a string it cannot encode (a lone surrogate) goes through jinja's instead."""
    try:
        text = to_json(value).decode()
    except ValueError:  # pydantic-core's serialisation error
        return str(htmlsafe_json_dumps(value))
    for char in HTML_UNSAFE:
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


HTML_UNSAFE = "<>&'"
"""What `html_json` never leaves in its text (each is written as its \\u escape)."""


def html_safe(text: bytes) -> bool:
    """Whether `text` holds none of `HTML_UNSAFE`: JSON that `html_json` may have written."""
    return not any(char.encode() in text for char in HTML_UNSAFE)


class CaseShown(NamedTuple):
    """What the drill-down keeps of a case: its title, its clipped `case_payload` as the page embeds it
    (`html_json`), and its trace summary when a picked record's trace was elided (else None)."""

    title: str | None
    json: str
    trace: list[dict[str, Any]] | None
