"""The ChatService verdict policy (INTERPRETATION §4–§6), named after the spec scenarios it decides."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.system.models import Derivability, LegacyVerification, Verdict, VerifierCall, VerifierEvaluation
from harness.system.pipeline import conclude, prepare
from harness.system.policy import PolicySettings
from tests.system.builders import INVOCATIONS, binding, claim, emission, output, reply

D = Derivability


def evaluate(
    doc: dict[str, Any] | None, reply_obj: Any = None, raw: str | None = None, guard: bool = True, finish: str = "stop"
) -> VerifierEvaluation:
    prepared = prepare("Why 500s?", emission(doc), INVOCATIONS)
    text = raw if raw is not None else json.dumps(reply_obj)
    return conclude(
        prepared, VerifierCall(raw_reply=text, model="test", finish_reason=finish), PolicySettings(claim_guard=guard)
    )


def checks(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"claim_id": c, "verification": v, "detail": "", "evidence_refs": []} for c, v in pairs]


TWO = output(claim("C1"), claim("C2", bindings=[binding("T2", "search_logs", ["inv-2"])]))


def test_pass_verdict_when_all_claims_have_evidence() -> None:
    ev = evaluate(TWO, reply("PASS", checks(("C1", "direct_observation"), ("C2", "reasonable_inference"))))
    assert (ev.verdict, ev.model_verdict, ev.derived_verdict) == (Verdict.PASS, Verdict.PASS, Verdict.PASS)
    assert ev.adjustments == []


def test_pass_needs_groundedness_of_at_least_one_half() -> None:
    ev = evaluate(TWO, reply("PASS", checks(("C1", "direct_observation"), ("C2", "direct_observation")), score=0.4))
    assert ev.verdict == Verdict.LOW_CONFID
    assert [a.step for a in ev.adjustments] == ["policy.claim_guard"]


@pytest.mark.parametrize("weak", ["unsupported", "external_unknown", "overstated"])
def test_low_confid_verdict_with_partial_evidence(weak: str) -> None:
    ev = evaluate(TWO, reply("PASS", checks(("C1", "direct_observation"), ("C2", weak))))
    assert ev.derived_verdict == Verdict.LOW_CONFID
    assert ev.verdict == Verdict.LOW_CONFID
    assert ev.model_verdict == Verdict.PASS


def test_low_confid_verdict_with_only_inference_support() -> None:
    ev = evaluate(TWO, reply("PASS", checks(("C1", "reasonable_inference"), ("C2", "reasonable_inference"))))
    assert ev.verdict == Verdict.LOW_CONFID


def test_non_critical_claims_do_not_decide_the_derived_verdict() -> None:
    doc = output(claim("C1"), claim("C2", critical=False, status="hypothesis"))
    ev = evaluate(doc, reply("PASS", checks(("C1", "direct_observation"), ("C2", "unsupported"))))
    assert ev.verdict == Verdict.PASS


def test_reject_verdict_when_claims_contradict_evidence() -> None:
    ev = evaluate(TWO, reply("LOW_CONFID", checks(("C1", "contradicted"), ("C2", "direct_observation"))))
    assert ev.derived_verdict == Verdict.REJECT
    assert ev.verdict == Verdict.REJECT
    assert ev.adjustments[-1].step == "policy.claim_guard"


def test_claim_guard_off_keeps_the_bare_model_verdict() -> None:
    ev = evaluate(TWO, reply("PASS", checks(("C1", "contradicted"), ("C2", "direct_observation"))), guard=False)
    assert ev.verdict == Verdict.PASS
    assert ev.derived_verdict == Verdict.REJECT
    assert ev.claim_guard is False


def test_guard_never_lowers_a_model_verdict() -> None:
    ev = evaluate(TWO, reply("REJECT", checks(("C1", "direct_observation"), ("C2", "direct_observation"))))
    assert ev.verdict == Verdict.REJECT


def test_gatekeeper_fail_prevents_pass() -> None:
    doc = output(claim("C1"), diagnosis_summary="V1 leftovers")
    ev = evaluate(doc, reply("PASS"))
    assert ev.gatekeeper_result.failed_rules == ["schema.executor_v2"]
    assert ev.verdict == Verdict.LOW_CONFID
    assert ev.adjustments[0].step == "policy.gatekeeper_fail"
    assert (ev.adjustments[0].from_verdict, ev.adjustments[0].to_verdict) == (Verdict.PASS, Verdict.LOW_CONFID)


def test_invocation_reference_failure_downgrades_to_reject() -> None:
    doc = output(claim("C1", bindings=[binding(ids=["inv-404"])]))
    ev = evaluate(doc, reply("PASS"))
    assert ev.verdict == Verdict.REJECT
    assert ev.model_verdict == Verdict.PASS
    # the direct_observation over a fabricated reference is sanitised to unsupported
    assert ev.claim_checks[0].verification == D.UNSUPPORTED


def test_gatekeeper_fail_with_a_model_low_confid_stays_low_confid() -> None:
    ev = evaluate(
        output(claim("C1", bindings=[binding(ids=["inv-404"])])), reply("LOW_CONFID", checks(("C1", "unsupported")))
    )
    assert ev.verdict == Verdict.LOW_CONFID


@pytest.mark.parametrize(
    "raw_output", [None, '{"schema_version": "executor_evidence_v2", "claims": [{"claim_id": "C1"']
)
@pytest.mark.parametrize("model_verdict", ["PASS", "REJECT"])
def test_malformed_structured_output_cannot_pass_through_natural_language_fallback(
    raw_output: str | None, model_verdict: str
) -> None:
    prepared = prepare("q", emission(None).model_copy(update={"structured_output_raw": raw_output}), INVOCATIONS)
    call = VerifierCall(raw_reply=json.dumps(reply(model_verdict)), model="t")
    ev = conclude(prepared, call)
    assert ev.executor_output_parse_status.status in {"missing", "malformed"}
    assert ev.verdict == Verdict.LOW_CONFID
    assert ev.claim_checks == []  # C1 of the prose is never verified
    assert ev.adjustments[-1].step == "policy.parse_status"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("I think it passes.", "not_json"),
        ('{"verdict": "PASS", "groundedness_score": 0.9', "not_json"),
        (json.dumps({**reply(), "verdict": "MAYBE"}), "schema"),
        (json.dumps({**reply(), "groundedness_score": 10}), "schema"),
        (json.dumps({k: v for k, v in reply().items() if k != "rationale"}), "schema"),
        (json.dumps(reply(checks=checks(("C1", "likely_true")))), "schema"),
        (json.dumps({**reply(), "facts_checked": [{"verification": "maybe"}]}), "schema"),
        (json.dumps({**reply(), "groundedness_score": "0.92"}), "schema"),
        (json.dumps({**reply(), "groundedness_score": True}), "schema"),
        (json.dumps({**reply(), "critical_fact_count": "2"}), "schema"),
    ],
)
def test_invalid_reply_is_low_confid(raw: str, reason: str) -> None:
    ev = evaluate(TWO, raw=raw)
    assert ev.reply_status.status == "invalid"
    assert ev.reply_status.reason == reason
    assert ev.verdict == Verdict.LOW_CONFID
    assert ev.model_verdict is None
    assert [c.verification for c in ev.claim_checks] == [D.UNSUPPORTED, D.UNSUPPORTED]


def test_cut_off_reply_is_invalid_truncated() -> None:
    ev = evaluate(TWO, raw='{"verdict": "PASS", "groundedness_score"', finish="length")
    assert (ev.reply_status.reason, ev.verdict) == ("truncated", Verdict.LOW_CONFID)


def test_claim_check_verification_values_are_constrained() -> None:
    ok = evaluate(TWO, reply("PASS", checks(*[("C1", d.value) for d in D][:1], ("C2", "overstated"))))
    assert ok.reply_status.status == "valid"
    bad = evaluate(TWO, reply("PASS", checks(("C1", "direct_evidence"))))
    assert bad.reply_status.status == "invalid"


def test_reply_inside_code_fences_and_prose_is_accepted() -> None:
    raw = "Here is my verdict:\n```json\n" + json.dumps(reply()) + "\n```\nThanks."
    ev = evaluate(output(claim()), raw=raw)
    assert ev.reply_status.status == "valid"
    assert ev.verdict == Verdict.PASS


def test_claim_level_verifier_output_is_accepted() -> None:
    ev = evaluate(TWO, reply("PASS", checks(("C1", "direct_observation"), ("C2", "direct_observation"))))
    dumped = ev.model_dump(mode="json")
    for key in ("verdict", "groundedness_score", "critical_fact_count", "claim_checks", "facts_checked", "rationale"):
        assert key in dumped
    assert ev.critical_fact_count == 2


def test_structured_executor_claims_are_verified_first() -> None:
    # A check for C9 (a fact from the prose, absent from the structured claims) is dropped;
    # C2 gets no check and counts as unsupported.
    ev = evaluate(TWO, reply("PASS", checks(("C1", "direct_observation"), ("C9", "direct_observation"))))
    assert [c.claim_id for c in ev.claim_checks] == ["C1", "C2"]
    assert ev.claim_checks[1].verification == D.UNSUPPORTED
    steps = [a.step for a in ev.adjustments]
    assert "sanitise.unknown_claim" in steps and "sanitise.missing_check" in steps
    assert ev.verdict == Verdict.LOW_CONFID


def test_a_claim_with_fabricated_references_is_not_direct_observation() -> None:
    doc = output(claim("C1"), claim("C2", bindings=[binding("T9", "search_logs", [])]))
    ev = evaluate(doc, reply("PASS", checks(("C1", "direct_observation"), ("C2", "direct_observation"))))
    assert ev.claim_checks[1].verification == D.UNSUPPORTED
    assert ev.verdict == Verdict.LOW_CONFID


def test_critical_fact_count_is_counted_by_the_system() -> None:
    ev = evaluate(output(claim("C1"), claim("C2", critical=False)), {**reply(), "critical_fact_count": 7})
    assert (ev.critical_fact_count, ev.model_critical_fact_count) == (1, 7)


def test_claim_checks_are_mapped_to_legacy_facts() -> None:
    doc = output(*[claim(f"C{i}") for i in range(6)])
    classes = [d.value for d in D]
    ev = evaluate(doc, reply("LOW_CONFID", checks(*[(f"C{i}", c) for i, c in enumerate(classes)])))
    mapping = {f.claim_id: f.verification for f in ev.facts_checked}
    assert mapping == {
        "C0": LegacyVerification.DIRECT_EVIDENCE,
        "C1": LegacyVerification.INDIRECT_SUPPORT,
        "C2": LegacyVerification.INDIRECT_SUPPORT,
        "C3": LegacyVerification.NO_EVIDENCE,
        "C4": LegacyVerification.NO_EVIDENCE,
        "C5": LegacyVerification.CONTRADICTED,
    }
    assert ev.facts_checked[0].fact == "statement of C0"


def test_model_facts_checked_are_never_copied() -> None:
    bogus = [{"claim_id": "C1", "fact": "invented", "verification": "contradicted"}]
    ev = evaluate(output(claim()), {**reply(), "facts_checked": bogus})
    assert [(f.fact, f.verification) for f in ev.facts_checked] == [
        ("statement of C1", LegacyVerification.DIRECT_EVIDENCE)
    ]


def test_claim_check_evidence_references_remain_auditable() -> None:
    doc = output(
        claim(
            "C1",
            bindings=[binding("T1", "query_prometheus_alerts", ["inv-1"]), binding(None, "search_logs", ["inv-2"])],
        )
    )
    partial = [
        {"claim_id": "C1", "verification": "direct_observation", "detail": "", "evidence_refs": [{"trace_ref": "T2"}]}
    ]
    ev = evaluate(doc, reply("PASS", partial))
    ref = ev.claim_checks[0].evidence_refs[0]
    assert (ref.trace_ref, ref.tool_name, ref.source_invocation_ids) == ("T2", "search_logs", ["inv-2"])
    empty = evaluate(doc, reply("PASS"))
    refs = [(r.trace_ref, r.tool_name, r.source_invocation_ids) for r in empty.claim_checks[0].evidence_refs]
    assert refs == [("T1", "query_prometheus_alerts", ["inv-1"]), ("T2", "search_logs", ["inv-2"])]


def test_the_first_valid_reply_object_is_taken_even_after_other_json() -> None:
    quoted = json.dumps(output(claim()))
    raw = f'The executor said:\n```json\n{quoted}\n```\nIt cites {{"trace_ref": "T1"}}. My verdict:\n```json\n{json.dumps(reply())}\n```'
    ev = evaluate(output(claim()), raw=raw)
    assert ev.reply_status.status == "valid" and ev.verdict == Verdict.PASS


def test_when_no_object_is_a_reply_the_error_is_the_reply_like_ones() -> None:
    raw = '{"trace_ref": "T1"} and then {"verdict": "PASS", "groundedness_score": 2}'
    ev = evaluate(output(claim()), raw=raw)
    assert ev.reply_status.reason == "schema" and "groundedness_score" in (ev.reply_status.message or "")


@pytest.mark.parametrize("raw", ['{"verdict": "PASS", "verdict": "REJECT"}', '{"groundedness_score": NaN}'])
def test_not_quite_json_replies_are_not_json(raw: str) -> None:
    ev = evaluate(output(claim()), raw=raw)
    assert ev.reply_status.reason == "not_json"


def test_repeated_checks_of_one_claim_keep_the_most_severe() -> None:
    doubled = checks(
        ("C1", "direct_observation"), ("C2", "direct_observation"), ("C2", "contradicted"), ("C2", "direct_observation")
    )
    ev = evaluate(TWO, reply("PASS", doubled))
    assert [c.verification for c in ev.claim_checks] == [D.DIRECT_OBSERVATION, D.CONTRADICTED]
    assert ev.verdict == Verdict.REJECT
    assert [a.step for a in ev.adjustments].count("sanitise.duplicate_check") == 2


def test_non_string_invocation_ids_are_not_rows_of_the_session() -> None:
    # "inv-1" exists; 1 (a number) is no row, whatever the trace_ref says
    doc = output(claim("C1", bindings=[binding("T1", "query_prometheus_alerts", [1])]))  # type: ignore[list-item]
    ev = evaluate(doc, reply("PASS"))
    assert "evidence.invocation_ref" in ev.gatekeeper_result.failed_rules
    assert ev.claim_checks[0].verification == D.UNSUPPORTED
    assert ev.verdict == Verdict.REJECT


def test_ref_completion_keeps_what_the_model_gave() -> None:
    given = [
        {
            "claim_id": "C1",
            "verification": "direct_observation",
            "detail": "",
            "evidence_refs": [{"trace_ref": "T1", "tool_name": "my_label", "source_invocation_ids": ["inv-9"]}],
        }
    ]
    ev = evaluate(output(claim()), reply("PASS", given))
    ref = ev.claim_checks[0].evidence_refs[0]
    assert (ref.trace_ref, ref.tool_name, ref.source_invocation_ids) == ("T1", "my_label", ["inv-9"])


def _entries(doc: dict[str, Any]) -> dict[str, list[str]]:
    from harness.system.policy import resolving_entries, structured_claims

    prepared = prepare("Why 500s?", emission(doc), INVOCATIONS)
    return {
        c.claim_id: [e.trace_ref for e in resolving_entries(c, prepared.gatekeeper, prepared.trace)]
        for c in structured_claims(prepared.parsed)
    }


def test_resolving_entries_follow_the_policys_binding_rule() -> None:
    doc = output(
        claim("C1"),  # T1 by id, right tool
        claim("C2", bindings=[binding("T2", "search_logs", [])]),  # no ids: the trace_ref decides
        claim("C3", bindings=[binding("T2", "query_prometheus_alerts", ["inv-2"])]),  # wrong tool: fails the ref rule
        claim("C4", bindings=[binding("T1", "query_prometheus_alerts", ["inv-99"])]),  # fabricated id
        claim("C5", bindings=[binding("T9", "search_logs", [])]),  # a trace_ref that is not in the trace
        claim("C6", bindings=[binding(None, "search_logs", ["inv-2"]), binding()]),  # two bindings, in order
    )
    assert _entries(doc) == {"C1": ["T1"], "C2": ["T2"], "C3": [], "C4": [], "C5": [], "C6": ["T2", "T1"]}


@pytest.mark.parametrize(
    ("verdict", "status", "rules", "either", "expected"),
    [
        (Verdict.PASS, "warn", [], True, {Verdict.PASS}),
        (Verdict.PASS, "fail", ["schema.executor_v2"], True, {Verdict.LOW_CONFID}),
        (Verdict.REJECT, "fail", ["schema.executor_v2"], True, {Verdict.REJECT}),
        (Verdict.PASS, "fail", ["evidence.invocation_ref"], True, {Verdict.LOW_CONFID, Verdict.REJECT}),
        (Verdict.LOW_CONFID, "fail", ["evidence.invocation_ref"], True, {Verdict.LOW_CONFID, Verdict.REJECT}),
        (Verdict.REJECT, "fail", ["evidence.invocation_ref"], True, {Verdict.REJECT}),
        # without the generator's latitude it is exactly the downgrade
        (Verdict.PASS, "fail", ["evidence.invocation_ref"], False, {Verdict.REJECT}),
        (Verdict.LOW_CONFID, "fail", ["evidence.invocation_ref"], False, {Verdict.LOW_CONFID}),
        (Verdict.PASS, "fail", ["schema.executor_v2"], False, {Verdict.LOW_CONFID}),
    ],
)
def test_verdicts_after_gatekeeper(
    verdict: Verdict, status: Any, rules: list[str], either: bool, expected: set[Verdict]
) -> None:
    from harness.system.policy import verdicts_after_gatekeeper

    assert verdicts_after_gatekeeper(verdict, status, rules, either_on_invocation_ref=either) == expected


def test_verdicts_implied_by_labels_try_every_combination_of_the_critical_labels() -> None:
    from harness.system.models import Claim
    from harness.system.policy import verdicts_implied_by_labels

    claims = [Claim(claim_id="C1", critical=True), Claim(claim_id="C2", critical=True), Claim(claim_id="C3")]
    labels = {"C1": {D.DIRECT_OBSERVATION, D.CONTRADICTED}, "C3": {D.UNSUPPORTED}}
    # C2 is critical and unlabelled: open for the generator, left out for conformance
    assert verdicts_implied_by_labels(labels, claims, every_critical_labelled=True) is None
    assert verdicts_implied_by_labels(labels, claims, every_critical_labelled=False) == {Verdict.PASS, Verdict.REJECT}
    labels["C2"] = {D.UNSUPPORTED}
    assert verdicts_implied_by_labels(labels, claims, every_critical_labelled=True) == {
        Verdict.LOW_CONFID,
        Verdict.REJECT,
    }


def test_adjustment_steps_persist_as_todays_text() -> None:
    from harness.system.models import Adjustment, AdjustmentStep

    ev = evaluate(output(claim()), reply("PASS", checks(("C1", "unsupported"))))
    assert ev.adjustments[-1].step is AdjustmentStep.CLAIM_GUARD
    dumped = ev.model_dump(mode="json")["adjustments"][-1]
    assert dumped["step"] == "policy.claim_guard"
    assert Adjustment.model_validate(dumped).step is AdjustmentStep.CLAIM_GUARD
