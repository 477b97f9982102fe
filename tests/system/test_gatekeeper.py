"""Gatekeeper rules (INTERPRETATION §3), one test per rule and per spec scenario it decides."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.system.gatekeeper import RULES, GatekeeperInput, run_gatekeeper
from harness.system.models import ToolInvocation
from harness.system.parser import parse_structured_output
from harness.system.trace import build_trace_summary
from tests.system.builders import INVOCATIONS, binding, claim, output


def gate(doc: Any, invocations: list[ToolInvocation] = INVOCATIONS, raw: str | None = None):
    text = raw if raw is not None else (None if doc is None else json.dumps(doc))
    return run_gatekeeper(
        GatekeeperInput(
            parsed=parse_structured_output(text),
            invocations={i.id: i for i in invocations},
            trace=build_trace_summary(invocations),
        )
    )


def test_registry_holds_exactly_the_interpreted_rules() -> None:
    assert {r.id: r.severity for r in RULES.values()} == {
        "schema.executor_v2": "fail",
        "evidence.invocation_ref": "fail",
        "schema.unknown_field": "warn",
        "evidence.trace_ref": "warn",
        "evidence.failed_invocation": "warn",
        "claims.no_critical": "warn",
    }


def test_valid_structured_output_passes_initial_gatekeeper_rules() -> None:
    doc = output(claim("C1"), claim("C2", bindings=[binding("T2", "search_logs", ["inv-2"])]))
    result = gate(doc)
    assert result.status == "pass"
    assert result.failed_rules == []
    assert result.errors == [] and result.warnings == []


@pytest.mark.parametrize("field", ["diagnosis_summary", "user_facing_answer"])
def test_schema_rule_rejects_removed_fields(field: str) -> None:
    result = gate(output(**{field: "the V1 summary"}))
    assert result.status == "fail"
    assert "schema.executor_v2" in result.failed_rules
    assert any(e.path == field for e in result.errors)


def test_schema_rule_rejects_missing_evidence_bindings() -> None:
    for c in (claim(bindings=[]), {k: v for k, v in claim().items() if k != "evidence_bindings"}):
        result = gate(output(c))
        assert result.status == "fail"
        assert result.failed_rules == ["schema.executor_v2"]
        assert result.errors[0].claim_id == "C1"


def test_hypothesis_without_bindings_is_allowed() -> None:
    assert gate(output(claim("C1"), claim("C2", critical=False, status="hypothesis", bindings=[]))).status == "pass"


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"claims": [claim()]}, "schema_version"),
        (output(claim(), schema_version="executor_evidence_v1"), "schema_version"),
        (output(claim(critical="yes")), "claims[0].critical"),
        (output(claim(status="maybe")), "claims[0].status"),
        (output({k: v for k, v in claim().items() if k != "statement"}), "claims[0].statement"),
        (output(claim(), claim()), "claims[1].claim_id"),
        (output(claim(bindings=[binding(tool_name=None)])), "claims[0].evidence_bindings[0].tool_name"),
        (output(claim(bindings=[binding(trace_ref=None, ids=[])])), "claims[0].evidence_bindings[0]"),
        (output(claim(bindings=["T1"])), "claims[0].evidence_bindings[0]"),
        (output(claim(), next_steps="restart"), "next_steps"),
        (output("C1"), "claims[0]"),
    ],
)
def test_schema_rule_fails_each_form(doc: dict[str, Any], path: str) -> None:
    result = gate(doc)
    assert result.status == "fail"
    assert "schema.executor_v2" in result.failed_rules
    assert path in [e.path for e in result.errors]


@pytest.mark.parametrize("raw", [None, "{not json"])
def test_schema_rule_fails_when_parse_status_is_not_valid(raw: str | None) -> None:
    result = gate(None, raw=raw)
    assert result.status == "fail"
    assert result.failed_rules == ["schema.executor_v2"]


def test_invocation_rule_rejects_fabricated_invocation_ids() -> None:
    result = gate(output(claim(bindings=[binding(ids=["inv-999"])])))
    assert result.status == "fail"
    assert result.failed_rules == ["evidence.invocation_ref"]
    assert "inv-999" in result.errors[0].message


def test_invocation_ids_of_another_session_count_as_fabricated() -> None:
    # inv-2 exists only in "another session": it is absent from the current session's rows.
    result = gate(output(claim(bindings=[binding("T2", "search_logs", ["inv-2"])])), invocations=INVOCATIONS[:1])
    assert result.failed_rules == ["evidence.invocation_ref"]


def test_invocation_rule_rejects_tool_name_mismatch() -> None:
    result = gate(output(claim(bindings=[binding("T1", "search_logs", ["inv-1"])])))
    assert result.status == "fail"
    assert result.failed_rules == ["evidence.invocation_ref"]
    assert "query_prometheus_alerts" in result.errors[0].message


def test_unknown_fields_only_warn() -> None:
    doc = output(claim(confidence=0.9, bindings=[{**binding(), "note": "x"}]), extra_top=1)
    result = gate(doc)
    assert result.status == "warn"
    assert result.failed_rules == []
    assert sorted(w.path for w in result.warnings) == [
        "claims[0].confidence",
        "claims[0].evidence_bindings[0].note",
        "extra_top",
    ]


def test_trace_ref_not_in_summary_warns() -> None:
    result = gate(output(claim(bindings=[binding("T9")])))
    assert (result.status, result.warning_rules) == ("warn", ["evidence.trace_ref"])


def test_failed_invocation_warns() -> None:
    result = gate(output(claim(bindings=[binding("T3", "kubectl_events", ["inv-3"])])))
    assert (result.status, result.warning_rules) == ("warn", ["evidence.failed_invocation"])


def test_no_critical_claim_warns() -> None:
    result = gate(output(claim(critical=False)))
    assert (result.status, result.warning_rules) == ("warn", ["claims.no_critical"])


def test_failed_rules_are_sorted_and_deduplicated() -> None:
    doc = output(claim("C1", bindings=[binding(ids=["x1"]), binding(ids=["x2"])]), claim("C1"), diagnosis_summary="s")
    result = gate(doc)
    assert result.failed_rules == ["evidence.invocation_ref", "schema.executor_v2"]
    assert len(result.errors) == 4
