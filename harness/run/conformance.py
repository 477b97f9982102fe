"""Conformance: does an outcome match a case's expectations, and do the invariants hold?

Pure functions over a case and what the system persisted. Policy cases must
agree 100%; the invariants hold for every case of either kind (CASE_FORMAT.md).

The rule sits beside the run log, as the outcome rule does: the run's worker checks each record against the
case it ran (`findings_of`) as it writes it, and the record keeps its findings (`ResultRecord.findings`), so
scoring reads records only. A record from a folder written before records carried them is checked when it is
read (`found`), against the case the folder holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import ValidationError

from harness.corpus.schema import Case
from harness.run.log import ResultRecord, with_trace
from harness.run.meaning import json_text, same_json, same_unordered
from harness.run.outcome import CLEAN, Findings, Outcome, outcome
from harness.system import policy
from harness.system.models import (
    DERIVABILITY_CLASSES,
    LEGACY_MAPPING,
    PERSISTED_FIELDS,
    Claim,
    Derivability,
    TraceEntry,
    Verdict,
    VerifierEvaluation,
)
from harness.system.protocol import ReportedEvaluation, ReportedTraceEntry
from harness.system.store_names import EVALUATION_KEY
from harness.system.trace import DEFAULT_EXCERPT_CHARS

Evaluation = VerifierEvaluation | ReportedEvaluation
"""What is judged: the bundled system's own evaluation, or any SUT's as read through the protocol (§7 names)."""


def read_evaluation(stored: Any) -> tuple[ReportedEvaluation | None, str | None]:
    """A persisted `verifier_evaluation` read by its §7 names, judging outcomes, not bytes; or why it cannot be,
    in JSON terms (the key path, what was found, and the fix when it is plain)."""
    if not isinstance(stored, Mapping):
        return None, "no verifier_evaluation persisted"
    missing = [f for f in PERSISTED_FIELDS if f not in stored]
    if missing:
        nullable = [f for f in missing if f in NULLABLE_FIELDS]
        hint = (
            " (" + ", ".join(f'write "{f}": null' for f in nullable) + " when it has no value: §7 keys are never left "
            "out, and a serialiser that omits nulls, Gson without serializeNulls() or Jackson NON_NULL, drops them)"
            if nullable
            else ""
        )
        keys = ", ".join(f'"{f}"' for f in missing)
        return None, f"verifier_evaluation has no {keys} key{'s' if len(missing) > 1 else ''}{hint}"
    try:
        return ReportedEvaluation.model_validate(stored), None
    except ValidationError as exc:
        errors = "; ".join(_validation_line(e) for e in exc.errors()[:5])
        return None, f"verifier_evaluation does not follow INTERPRETATION §7: {errors}"


NULLABLE_FIELDS = frozenset({"model_verdict", "groundedness_score"})
"""The §7 keys whose value may be null: written as null when they have none, never left out (§8)."""


def _validation_line(error: Any) -> str:
    """One pydantic error as a JSON key path, the JSON value found and what was wanted."""
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"]).lstrip(".")
    found = error.get("input")
    shown = "absent" if error["type"] == "missing" else json_text(found)
    return f"{path} is {shown}: {error['msg'][0].lower()}{error['msg'][1:]}"


def deterministic_mismatches(case: Case, evaluation: Evaluation) -> list[str]:
    """Parse status and gatekeeper: decided without any model, for both kinds of case."""
    exp = case.expected
    got_gk = evaluation.gatekeeper_result
    out: list[str] = []
    if evaluation.executor_output_parse_status.status != exp.parse_status:
        out.append(f"parse_status: expected {exp.parse_status}, got {evaluation.executor_output_parse_status.status}")
    if got_gk.status != exp.gatekeeper.status:
        out.append(f"gatekeeper.status: expected {exp.gatekeeper.status}, got {got_gk.status}")
    if sorted(set(exp.gatekeeper.failed_rules)) != got_gk.failed_rules:
        out.append(
            f"gatekeeper.failed_rules: expected {json_text(sorted(set(exp.gatekeeper.failed_rules)))}, got {json_text(got_gk.failed_rules)}"
        )
    if exp.gatekeeper.warnings is not None and set(exp.gatekeeper.warnings) != set(got_gk.warning_rules):
        out.append(
            f"gatekeeper.warnings: expected {json_text(sorted(set(exp.gatekeeper.warnings)))}, got {json_text(got_gk.warning_rules)}"
        )
    if any(line.startswith("gatekeeper.") for line in out):
        out += [
            f"  the gatekeeper says: {issue.rule}: {issue.message}" + (f" (at {issue.path})" if issue.path else "")
            for issue in [*got_gk.errors, *got_gk.warnings]
        ]
    return out


def expectation_outcome(case: Case, evaluation: Evaluation) -> Outcome:
    """The evaluation judged against the case's gold by the one outcome rule (`score.outcome`), whose mismatch
    lines conformance reports (sanitised claim classes against the gold labels; absent labels: not compared)."""
    exp = case.expected
    model = exp.acceptable_model_verdicts()
    return outcome(
        error=None,
        verdict=evaluation.verdict,
        model_verdict=evaluation.model_verdict,
        claims={c.claim_id: _value(c.verification) for c in evaluation.claim_checks},
        gold_verdicts=sorted(str(v) for v in exp.acceptable_verdicts()),
        gold_claims={cid: [a.value for a in ok] for cid, ok in exp.acceptable_labels().items()},
        gold_model_verdicts=None if model is None else sorted(str(v) for v in model),
    )


def _value(item: Any) -> str:
    return str(item.value) if isinstance(item, Enum) else str(item)


def policy_case_mismatches(case: Case, evaluation: Evaluation) -> list[str]:
    """Everything a policy case pins down; empty means the case passes."""
    result = expectation_outcome(case, evaluation)
    return deterministic_mismatches(case, evaluation) + result.claim_mismatches + result.verdict_mismatches


@dataclass(frozen=True, eq=False)
class CaseView:
    """What the invariants read of one case at one excerpt limit, derived once.

    Every result of a case is judged against the same claims and spec trace: a stream of results (scoring reads
    a case's results together, in key order) builds this once per case and passes it with each result.
    """

    case: Case
    excerpt_chars: int
    critical: int
    statements: dict[str, str]
    trace_fields: list[dict[str, Any]]
    """The spec trace's §7 fields as JSON (what every persisted trace summary is compared with)."""
    trace_refs: frozenset[str]
    invocation_ids: frozenset[str]
    bound: dict[str, bool]
    claimed: frozenset[str]
    reported_trace: tuple[ReportedTraceEntry, ...]
    """The spec trace as an evaluation reports it: what a record's elided trace is restored to when it is judged."""

    @classmethod
    def of(cls, case: Case, excerpt_chars: int = DEFAULT_EXCERPT_CHARS) -> CaseView:
        claims = _executor_claims(case)
        trace = spec_trace(case, excerpt_chars)
        return cls(
            case=case,
            excerpt_chars=excerpt_chars,
            # counted as the system must (§5 step 3), not as a model says
            critical=sum(1 for c in claims if c.critical),
            statements={c.claim_id: c.statement for c in claims},
            trace_fields=[e.model_dump(mode="json", include=set(TRACE_FIELDS)) for e in trace],
            trace_refs=frozenset(e.trace_ref for e in trace),
            invocation_ids=frozenset(i for e in trace for i in e.source_invocation_ids),
            bound={c.claim_id: bool(c.evidence_bindings) for c in claims},
            claimed=frozenset(c.claim_id for c in claims),
            reported_trace=tuple(ReportedTraceEntry.model_validate(e) for e in case.trace_json(excerpt_chars)),
        )

    def fits(self, case: Case, excerpt_chars: int) -> bool:
        """Made of this very case object at this limit (anything else is built anew)."""
        return self.case is case and self.excerpt_chars == excerpt_chars


class CaseViews:
    """The `CaseView` of the last case asked for: a stream of results that comes case by case builds each once."""

    def __init__(self) -> None:
        self._last: CaseView | None = None

    def get(self, case: Case, excerpt_chars: int = DEFAULT_EXCERPT_CHARS) -> CaseView:
        if self._last is None or not self._last.fits(case, excerpt_chars):
            self._last = CaseView.of(case, excerpt_chars)
        return self._last


def case_problems(
    record: ResultRecord,
    case: Case | None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    views: CaseViews | None = None,
) -> tuple[list[str], list[str]]:
    """(expectation mismatches, invariant violations) of one record.

    Policy records are checked whole; quality records on their deterministic
    parts (parse status, gatekeeper). Every record is checked for invariants.
    `views`: where a stream of records keeps its current case's `CaseView` (built once per case).
    """
    persisted = record.persisted
    if persisted is None or not isinstance(persisted.get(EVALUATION_KEY), dict):
        return ([f"no evaluation: {record.error}"] if record.kind == "policy" else []), []
    if case is None:
        return ["case content missing from the run log"], []
    view = views.get(case, excerpt_chars) if views is not None else CaseView.of(case, excerpt_chars)
    restored = record.trace_from_case
    if restored:  # the elided trace is the case's spec trace, already read as reported
        persisted = with_trace(persisted, list(view.reported_trace)) or persisted
    read = read_evaluation(persisted[EVALUATION_KEY])
    evaluation, unreadable = read
    if evaluation is None:
        violations = invariant_violations(case, persisted, excerpt_chars, read, view, restored)
        return [str(unreadable)], [v for v in violations if v != unreadable]  # said once, as the mismatch
    mismatches = (
        policy_case_mismatches(case, evaluation)
        if record.kind == "policy"
        else deterministic_mismatches(case, evaluation)
    )
    return mismatches, invariant_violations(case, persisted, excerpt_chars, read, view, restored)


def findings_of(
    record: ResultRecord, case: Case | None, excerpt_chars: int, views: CaseViews | None = None
) -> Findings:
    """`case_problems` as the record keeps them (one shared `CLEAN` for a record that met its case)."""
    mismatches, violations = case_problems(record, case, excerpt_chars, views)
    if not mismatches and not violations:
        return CLEAN
    return Findings(mismatches=tuple(mismatches), invariant_violations=tuple(violations))


def found(
    record: ResultRecord, case_of: Callable[[str], Case | None], excerpt_chars: int, views: CaseViews | None = None
) -> Findings:
    """A record's findings: the ones stored with it, or, for a record written before records carried them (or
    made where its case was not at hand), its case checked now (`case_of`: the folder's). Every reader of a
    record's findings goes through here, as every reader of its outcome goes through `judged`."""
    if record.findings is not None:
        return record.findings
    return findings_of(record, case_of(record.case_id), excerpt_chars, views)


def invariant_violations(
    case: Case,
    self_evaluation: Mapping[str, Any],
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    read: tuple[ReportedEvaluation | None, str | None] | None = None,
    view: CaseView | None = None,
    trace_from_case: bool = False,
) -> list[str]:
    """The invariants every case must satisfy, read from the persisted `self_evaluation`.

    `excerpt_chars` is the run's excerpt limit: with it the spec defines the trace summary the system
    must have persisted, and every evidence ref is judged against that trace, not the one the SUT wrote.
    `read`: the evaluation already read by `read_evaluation` (it is parsed once). `view`: the case's
    `CaseView` at this limit, when the caller keeps one per case (one of another case or limit is not used).
    `trace_from_case`: the evaluation's trace summary was elided from the record because it was the spec's and
    is restored from the case (`CaseView.reported_trace`): it is the spec's trace by construction, not compared.
    """
    out = sibling_violations(case.session.self_evaluation, self_evaluation)
    evaluation, unreadable = read or read_evaluation(self_evaluation.get(EVALUATION_KEY))
    if evaluation is None:
        return [*out, str(unreadable)]
    if view is None or not view.fits(case, excerpt_chars):
        view = CaseView.of(case, excerpt_chars)
    # CASE_FORMAT: "a parse status other than `valid` never ends in PASS" (INTERPRETATION §5 step 1).
    if evaluation.executor_output_parse_status.status != "valid" and evaluation.verdict == Verdict.PASS:
        out.append("a parse status other than valid ended in PASS")
    if any(c.verification not in _CLASSES for c in evaluation.claim_checks):
        out.append("a claim check outside the fixed derivability set")
    out.extend(_fact_violations(evaluation, view.statements))
    out.extend(one_per_claim_violations(view, evaluation))
    if evaluation.critical_fact_count != view.critical:
        out.append(
            f"critical_fact_count is {evaluation.critical_fact_count}; the executor marked {view.critical} claims "
            "critical"
        )
    if not trace_from_case:
        out.extend(_trace_violations(view.trace_fields, evaluation))
    out.extend(_ref_violations(view, evaluation))
    out.extend(
        f"claim check for {c.claim_id}, which the executor never claimed"
        for c in evaluation.claim_checks
        if c.claim_id not in view.claimed
    )
    out.extend(_gatekeeper_violations(evaluation))
    out.extend(_score_and_adjustment_violations(evaluation))
    return out


def sibling_violations(sent: Mapping[str, Any], persisted: Mapping[str, Any]) -> list[str]:
    """§7: "Writing it merges into self_evaluation: sibling keys written by others are kept" (kept, so unchanged,
    JSON by value: `null`s kept, `1` and `1.0` alike, `true` not `1`, no integer rounded); and isolation (§8): no
    key the session did not have, which would be another session's data or a key the verifier does not own."""
    out: list[str] = []
    for key, value in sent.items():
        if key == EVALUATION_KEY:
            continue
        if key not in persisted:
            hint = " (a serialiser that omits nulls drops it: write nulls)" if _holds_null(value) else ""
            out.append(f'sibling key "{key}" of self_evaluation was lost: it was {json_text(value)}{hint}')
        elif not same_json(persisted[key], value):
            out.append(
                f'sibling key "{key}" of self_evaluation was changed: sent {json_text(value)}, answered '
                f"{json_text(persisted[key])}"
            )
    out += [
        f'self_evaluation holds "{key}", which this session did not have: another session\'s data or a key the '
        "verifier does not own (only verifier_evaluation is written)"
        for key in persisted
        if key != EVALUATION_KEY and key not in sent
    ]
    return out


def _holds_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, Mapping):
        return any(_holds_null(v) for v in value.values())
    return isinstance(value, list) and any(_holds_null(v) for v in value)


_CLASSES = frozenset(DERIVABILITY_CLASSES)
TRACE_FIELDS = ("trace_ref", "tool_name", "source_invocation_ids", "status", "result_excerpt")
"""The fields of a trace summary entry INTERPRETATION §7 names (a SUT may add its own)."""


_LEGACY = {d.value: LEGACY_MAPPING[d].value for d in Derivability}


def _legacy(verification: str) -> str | None:
    """The legacy class §6 maps a derivability class to (None outside the set)."""
    return _LEGACY.get(verification)


def _executor_claims(case: Case) -> list[Claim]:
    """The executor's structured claims as the system reads them (one parse serves every invariant)."""
    return case.executor_claims


def spec_trace(case: Case, excerpt_chars: int = DEFAULT_EXCERPT_CHARS) -> list[TraceEntry]:
    """The trace summary the spec defines for the case: the case's own, else built from its invocations (§7)."""
    return case.trace(excerpt_chars)


def _fact_violations(evaluation: ReportedEvaluation, statements: Mapping[str, str]) -> list[str]:
    """INTERPRETATION §6: "One item per claim: {claim_id, fact (the statement), verification, detail}",
    derived from the sanitised claim checks by the fixed mapping (`statements`: the executor's, by claim id)."""
    out: list[str] = []
    # "One item per claim" sets no order: compared as a multiset of (claim id, class).
    expected_facts = [(c.claim_id, _legacy(c.verification)) for c in evaluation.claim_checks]
    got_facts = [(f.claim_id, f.verification) for f in evaluation.facts_checked]
    if not same_unordered(got_facts, expected_facts, key=lambda fact: fact):
        classes = {c.claim_id: c.verification for c in evaluation.claim_checks}
        named = [
            f"facts_checked for claim {f.claim_id} is {json_text(f.verification)}; its claim check is "
            f"{json_text(classes[f.claim_id])}, which §6 maps to {json_text(_legacy(classes[f.claim_id]))}"
            for f in evaluation.facts_checked
            if f.claim_id in classes and f.verification != _legacy(classes[f.claim_id])
        ]
        out += named or [
            f"facts_checked is not the fixed mapping of the claim checks: it holds {json_text(sorted(map(list, got_facts), key=str))}, "
            f"the checks map to {json_text(sorted(map(list, expected_facts), key=str))}"
        ]
    out.extend(
        f"facts_checked.{f.claim_id}: fact is {json_text(f.fact)}, not the claim's statement"
        for f in evaluation.facts_checked
        if f.claim_id in statements and f.fact != statements[f.claim_id]
    )
    return out


def one_per_claim_violations(view: CaseView, evaluation: ReportedEvaluation) -> list[str]:
    """§5 step 3 and §6: exactly one claim check and one legacy fact per structured claim, whatever the reply held
    (two checks of one claim keep the most severe; a claim with no check is persisted as unsupported)."""
    out: list[str] = []
    for name, items in (("claim_checks", evaluation.claim_checks), ("facts_checked", evaluation.facts_checked)):
        counts = Counter(item.claim_id for item in items)
        for cid in sorted(view.claimed):
            if counts[cid] == 0:
                out.append(
                    f"{name} has no item for claim {cid}: one per structured claim (a claim with no check is "
                    "persisted as unsupported)"
                )
            elif counts[cid] > 1:
                out.append(
                    f"{name} has {counts[cid]} items for claim {cid}: one per structured claim (of two checks the "
                    "most severe class is kept)"
                )
    return out


def _trace_violations(want: list[dict[str, Any]], evaluation: ReportedEvaluation) -> list[str]:
    """INTERPRETATION §7: one entry per invocation of the session, in order, T1, T2, ..., with tool_name,
    source_invocation_ids, status and an excerpt cut at the run's limit (or the case's own summary).
    `want`: the spec trace's fields (`CaseView.trace_fields`)."""
    got = [e.model_dump(mode="json", include=set(TRACE_FIELDS)) for e in evaluation.tool_trace_summary]
    if want == got:
        return []
    if len(got) != len(want):
        return [
            f"tool_trace_summary has {len(got)} entries {json_text([e['trace_ref'] for e in got])}; the session's "
            f"trace has {len(want)} {json_text([e['trace_ref'] for e in want])}, one per invocation in order"
        ]
    out: list[str] = []
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        for field_name in TRACE_FIELDS:
            if g.get(field_name) != w.get(field_name):
                detail = (
                    f" ({len(g[field_name])} characters; the spec's {len(w[field_name])}, cut at the excerpt limit)"
                    if field_name == "result_excerpt" and isinstance(g.get(field_name), str)
                    else ""
                )
                out.append(
                    f"tool_trace_summary[{index}] ({w['trace_ref']}) {field_name} is {json_text(g.get(field_name), 80)}; "
                    f"the session's trace gives {json_text(w.get(field_name), 80)}{detail}"
                )
    return out


def _ref_violations(view: CaseView, evaluation: ReportedEvaluation) -> list[str]:
    """Evidence refs judged against the spec's trace, not the SUT's own."""
    by_ref, by_id, bound = view.trace_refs, view.invocation_ids, view.bound
    out: list[str] = []
    for check in evaluation.claim_checks:
        # §5 step 3: "A check whose evidence_refs are empty or partial is completed from the claim's bindings".
        if not check.evidence_refs and bound.get(check.claim_id):
            out.append(f"claims.{check.claim_id}: evidence_refs empty though the claim has evidence bindings")
        for ref in check.evidence_refs:
            # §7: "every ref keeps the trace_ref, tool_name and source_invocation_ids that are available,
            # filled from the trace summary where the model left them out".
            known = ref.trace_ref in by_ref or any(i in by_id for i in ref.source_invocation_ids)
            if known and not (ref.trace_ref and ref.tool_name and ref.source_invocation_ids):
                out.append(
                    f"claims.{check.claim_id}: evidence ref {json_text(ref.model_dump(exclude_none=True))} lost a field the trace summary has"
                )
    return out


def _gatekeeper_violations(evaluation: ReportedEvaluation) -> list[str]:
    """INTERPRETATION §3: "Status is fail if any fail rule fires, else warn if any warning, else pass.
    failed_rules is the sorted, de-duplicated list of fail rule ids; errors and warnings are lists of
    {rule, message, claim_id?, path?}" (so the errors name exactly the failed rules)."""
    gk = evaluation.gatekeeper_result
    out: list[str] = []
    if {e.rule for e in gk.errors} != set(gk.failed_rules):
        out.append(
            f"gatekeeper errors name {json_text(sorted({e.rule for e in gk.errors}))}, failed_rules {json_text(gk.failed_rules)}"
        )
    status = "fail" if gk.failed_rules else "warn" if gk.warnings else "pass"
    if gk.status != status:
        out.append(f"gatekeeper status is {gk.status}; its failed_rules and warnings make it {status}")
    return out


def _score_and_adjustment_violations(evaluation: ReportedEvaluation) -> list[str]:
    out: list[str] = []
    score = evaluation.groundedness_score
    # A share (§4 step 3 compares it with 0.5; the verifier contract's range is 0.0-1.0); null without a reply.
    if score is not None and not 0.0 <= score <= 1.0:
        out.append(f"groundedness_score {score} is outside [0, 1]")
    # INTERPRETATION §5: "Every step that changed the verdict is recorded as an adjustment with its reason."
    model = evaluation.model_verdict
    if model is not None and evaluation.verdict != model and not evaluation.adjustments:
        out.append(f"verdict {model.value} became {evaluation.verdict.value} with no adjustment recorded")
    return out


def _claim_ids(case: Case) -> set[str]:
    return {c.claim_id for c in _executor_claims(case)}


def _names(verdicts: set[Verdict]) -> list[str]:
    return sorted(v.value for v in verdicts)


def verdicts_implied_by_labels(case: Case) -> set[Verdict] | None:
    """The effective verdicts a correct verifier could reach from the case's gold labels.

    None when the case has no claim labels. A correct model is assumed to say the derived verdict
    (`policy.verdicts_implied_by_labels`), so only the gatekeeper downgrade applies to it.
    """
    if case.expected.parse_status != "valid":
        return {Verdict.LOW_CONFID}
    labels = case.expected.acceptable_labels()
    if not labels:
        return None
    derived = policy.verdicts_implied_by_labels(labels, _executor_claims(case), every_critical_labelled=False)
    gatekeeper = case.expected.gatekeeper
    return {
        verdict
        for v in derived or set()
        for verdict in policy.verdicts_after_gatekeeper(
            v, gatekeeper.status, gatekeeper.failed_rules, either_on_invocation_ref=False
        )
    }


def label_consistency_problems(case: Case) -> list[str]:
    """A quality case's expected verdict must be reachable from its gold labels (§4, §5)."""
    implied = verdicts_implied_by_labels(case)
    if implied is None:
        return []
    problems: list[str] = []
    if not implied & case.expected.acceptable_verdicts():
        problems.append(
            f"expected verdict {_names(case.expected.acceptable_verdicts())} but the gold labels imply {_names(implied)}"
        )
    claimed = _claim_ids(case)
    problems += [
        f"expected.claims names {cid}, which the executor never claimed"
        for cid in case.expected.acceptable_labels()
        if cid not in claimed
    ]
    return problems


def quality_case_problems(case: Case) -> list[str]:
    """A quality case's parse status and gatekeeper (run without a model) and its label consistency."""
    from harness.system.models import VerifierCall
    from harness.system.pipeline import conclude, prepare

    prepared = prepare(
        case.session.question, case.executor.emission(), case.session.tool_invocations, case.session.tool_trace_summary
    )
    evaluation = conclude(prepared, VerifierCall(raw_reply=None, model="none", error="not called"))
    return deterministic_mismatches(case, evaluation) + label_consistency_problems(case)


def case_check_problems(case: Case) -> list[str]:
    """Everything a case pins down without a model: a policy case whole, a quality case's deterministic parts."""
    if case.kind == "quality":
        return quality_case_problems(case)
    import asyncio

    from harness.run.execute import run_case, scripted_verifier_for

    evaluation, persisted = asyncio.run(run_case(case, scripted_verifier_for(case)))
    return policy_case_mismatches(case, evaluation) + invariant_violations(case, persisted)
