"""Small builders for sessions and executor outputs used across the system tests."""

from __future__ import annotations

import json
from typing import Any

from harness.system.models import ExecutorEmission, ToolInvocation

INVOCATIONS = [
    ToolInvocation(
        id="inv-1",
        tool_name="query_prometheus_alerts",
        result='[{"alertname":"HighErrorRate","service":"order-service","value":"12.4%"}]',
    ),
    ToolInvocation(
        id="inv-2",
        tool_name="search_logs",
        result="10:02:11 ERROR order-service HikariPool-1 - Connection is not available, request timed out after 30000ms.",
    ),
    ToolInvocation(
        id="inv-3",
        tool_name="kubectl_events",
        status="error",
        result="error: the server doesn't have a resource type 'evnts'",
    ),
]


def binding(
    trace_ref: str | None = "T1", tool_name: str | None = "query_prometheus_alerts", ids: list[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if trace_ref is not None:
        out["trace_ref"] = trace_ref
    if tool_name is not None:
        out["tool_name"] = tool_name
    out["source_invocation_ids"] = ["inv-1"] if ids is None else ids
    return out


def claim(
    claim_id: str = "C1",
    critical: bool = True,
    status: str = "confirmed",
    bindings: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "statement": f"statement of {claim_id}",
        "status": status,
        "critical": critical,
        "evidence_bindings": [binding()] if bindings is None else bindings,
        **extra,
    }


def output(*claims: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"schema_version": "executor_evidence_v2", "claims": list(claims) or [claim()], **top}


def emission(doc: dict[str, Any] | None) -> ExecutorEmission:
    return ExecutorEmission(final_answer="prose answer", structured_output_raw=None if doc is None else json.dumps(doc))


def reply(verdict: str = "PASS", checks: list[dict[str, Any]] | None = None, score: float = 0.9) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "groundedness_score": score,
        "critical_fact_count": 1,
        "claim_checks": [
            {"claim_id": "C1", "verification": "direct_observation", "detail": "seen", "evidence_refs": []}
        ]
        if checks is None
        else checks,
        "facts_checked": [],
        "rationale": "r",
    }
