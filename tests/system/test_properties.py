"""Property tests (hypothesis) for the policy invariants of issue 2."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.system.models import LEGACY_MAPPING, SEVERITY, Derivability, Verdict, VerifierCall
from harness.system.pipeline import conclude, prepare
from harness.system.trace import build_trace_summary
from tests.system.builders import INVOCATIONS

CLAIM_IDS = ["C1", "C2", "C3", "C4"]
TOOLS = {i.id: i.tool_name for i in INVOCATIONS}

bindings = st.fixed_dictionaries(
    {},
    optional={
        "trace_ref": st.sampled_from(["T1", "T2", "T3", "T9"]),
        "tool_name": st.sampled_from(["query_prometheus_alerts", "search_logs", "kubectl_events"]),
        "source_invocation_ids": st.lists(st.sampled_from(["inv-1", "inv-2", "inv-3", "inv-x"]), max_size=2),
    },
)
claims = st.builds(
    lambda cid, crit, status, bs: {
        "claim_id": cid,
        "statement": f"s {cid}",
        "status": status,
        "critical": crit,
        "evidence_bindings": bs,
    },
    st.sampled_from(CLAIM_IDS),
    st.booleans(),
    st.sampled_from(["confirmed", "hypothesis"]),
    st.lists(bindings, max_size=3),
)
outputs = st.builds(
    lambda cs, v1: {
        "schema_version": "executor_evidence_v2",
        "claims": cs,
        **({"diagnosis_summary": "x"} if v1 else {}),
    },
    st.lists(claims, max_size=4),
    st.booleans(),
)
raw_outputs = st.one_of(st.none(), st.just('{"claims": ['), outputs.map(json.dumps))
refs = st.fixed_dictionaries(
    {},
    optional={
        "trace_ref": st.sampled_from(["T1", "T2", "T9"]),
        "tool_name": st.sampled_from(["search_logs", "query_prometheus_alerts"]),
        "source_invocation_ids": st.lists(st.sampled_from(["inv-1", "inv-2"]), max_size=2),
    },
)
checks = st.lists(
    st.builds(
        lambda cid, v, rs: {"claim_id": cid, "verification": v, "detail": "", "evidence_refs": rs},
        st.sampled_from([*CLAIM_IDS, "C9"]),
        st.sampled_from([d.value for d in Derivability]),
        st.lists(refs, max_size=2),
    ),
    max_size=5,
)
replies = st.builds(
    lambda v, g, cs: json.dumps(
        {
            "verdict": v,
            "groundedness_score": g,
            "critical_fact_count": 1,
            "claim_checks": cs,
            "facts_checked": [],
            "rationale": "",
        }
    ),
    st.sampled_from([v.value for v in Verdict]),
    st.floats(0, 1),
    checks,
)
reply_texts = st.one_of(replies, st.just("not json"), st.just(""))


def evaluate(raw: str | None, reply_text: str, guard: bool = True):
    from harness.system.models import ExecutorEmission
    from harness.system.policy import PolicySettings

    prepared = prepare("q", ExecutorEmission(final_answer="a", structured_output_raw=raw), INVOCATIONS)
    return conclude(prepared, VerifierCall(raw_reply=reply_text, model="p"), PolicySettings(claim_guard=guard))


@settings(max_examples=300, deadline=None)
@given(raw_outputs, reply_texts)
def test_parse_status_other_than_valid_never_ends_in_pass(raw: str | None, reply_text: str) -> None:
    ev = evaluate(raw, reply_text, guard=False)
    if ev.executor_output_parse_status.status != "valid":
        assert ev.verdict == Verdict.LOW_CONFID


@settings(max_examples=300, deadline=None)
@given(raw_outputs, reply_texts)
def test_guard_on_effective_verdict_is_never_less_severe_than_derived(raw: str | None, reply_text: str) -> None:
    ev = evaluate(raw, reply_text)
    assert ev.derived_verdict is not None
    assert SEVERITY[ev.verdict] >= SEVERITY[ev.derived_verdict]
    if ev.executor_output_parse_status.status == "valid" and ev.reply_status.status == "valid":
        assert SEVERITY[ev.verdict] >= SEVERITY[ev.model_verdict]  # type: ignore[index]
    if ev.gatekeeper_result.status == "fail":
        assert ev.verdict != Verdict.PASS


@settings(max_examples=300, deadline=None)
@given(raw_outputs, reply_texts)
def test_legacy_mapping_is_total_and_fixed(raw: str | None, reply_text: str) -> None:
    ev = evaluate(raw, reply_text)
    assert [(f.claim_id, f.verification) for f in ev.facts_checked] == [
        (c.claim_id, LEGACY_MAPPING[c.verification]) for c in ev.claim_checks
    ]
    assert set(LEGACY_MAPPING) == set(Derivability)


@settings(max_examples=300, deadline=None)
@given(outputs, reply_texts)
def test_persisted_checks_name_only_claims_the_executor_made(doc: dict[str, Any], reply_text: str) -> None:
    ev = evaluate(json.dumps(doc), reply_text)
    made = [c["claim_id"] for c in doc["claims"]]
    checked = [c.claim_id for c in ev.claim_checks]
    assert set(checked) <= set(made)
    assert len(checked) == len(set(checked)) == len(set(made))


@settings(max_examples=300, deadline=None)
@given(outputs, reply_texts)
def test_every_evidence_ref_keeps_the_available_fields(doc: dict[str, Any], reply_text: str) -> None:
    ev = evaluate(json.dumps(doc), reply_text)
    trace = {t.trace_ref: t for t in build_trace_summary(INVOCATIONS)}
    for check in ev.claim_checks:
        for ref in check.evidence_refs:
            if ref.trace_ref in trace:
                assert ref.tool_name and ref.source_invocation_ids, ref
            for inv in ref.source_invocation_ids:
                if inv in TOOLS and ref.trace_ref is None:
                    raise AssertionError(f"ref with known invocation {inv} lost its trace_ref: {ref}")
