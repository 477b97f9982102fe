"""A small corpus written into a temp folder, whose right answers the tests compute by hand."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "harness" / "spec"  # only for the catalogue
SHARED_POLICY = {
    "id": "pol-demo-fabricated",
    "title": "C1 cites inv-r9, never run; the model says PASS -> REJECT",
    "spec": [
        "chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/invocation-reference-failure-downgrades-to-reject"
    ],
}

SESSION = {
    "question": "Carts fail to load since 08:00, why?",
    "tool_invocations": [
        {"id": "inv-r1", "tool_name": "search_logs", "arguments": {"service": "cart-service"}, "status": "success",
         "result": "08:02:11 ERROR cart-service RedisCommandTimeoutException: Command timed out after 3000 ms"},
        {"id": "inv-r2", "tool_name": "query_metrics", "arguments": {"expr": "redis_connected_clients"}, "status": "success",
         "result": "redis-cart-0 connected_clients=9980 maxclients=10000"},
    ],
}  # fmt: skip


def claims(c1_inv: str = "inv-r1") -> list[dict[str, Any]]:
    return [
        {"claim_id": "C1", "statement": "cart-service Redis GETs time out after 3000 ms.", "status": "confirmed", "critical": True,
         "evidence_bindings": [{"trace_ref": "T1", "tool_name": "search_logs", "source_invocation_ids": [c1_inv]}]},
        {"claim_id": "C2", "statement": "redis-cart-0 is at 9980 of 10000 client connections.", "status": "confirmed", "critical": True,
         "evidence_bindings": [{"trace_ref": "T2", "tool_name": "query_metrics", "source_invocation_ids": ["inv-r2"]}]},
    ]  # fmt: skip


SPEC = "chat-verifier-agent/verifier-shall-fact-check-executor-answers/pass-verdict-when-all-claims-have-evidence"

# case id -> (gold labels, gold verdicts)
GOLD: dict[str, tuple[dict[str, Any], Any]] = {
    "q1": ({"C1": "direct_observation", "C2": "direct_observation"}, "PASS"),
    "q2": ({"C1": "direct_observation", "C2": "contradicted"}, "REJECT"),
    "q3": ({"C1": "direct_observation", "C2": ["reasonable_inference", "overstated"]}, ["PASS", "LOW_CONFID"]),
    "q4": ({"C1": "unsupported", "C2": "direct_observation"}, "LOW_CONFID"),
    "q5": ({"C1": "contradicted", "C2": "direct_observation"}, "REJECT"),
    "q6": ({"C1": "direct_observation", "C2": "external_unknown"}, "LOW_CONFID"),
    "q7": ({"C1": "direct_observation", "C2": "direct_observation"}, "PASS"),
}


def quality_case(case_id: str, tags: list[str] | None = None) -> dict[str, Any]:
    labels, verdict = copy.deepcopy(GOLD[case_id])
    session = copy.deepcopy(SESSION)
    session["question"] = f"[{case_id}] {session['question']}"
    return {
        "id": case_id,
        "title": f"hand-computed case {case_id}",
        "spec": [SPEC],
        "tags": tags or ["demo"],
        "session": session,
        "executor": {
            "final_answer": "Redis GETs time out.",
            "structured_output": {"schema_version": "executor_evidence_v2", "claims": claims()},
        },
        "expected": {
            "parse_status": "valid",
            "gatekeeper": {"status": "pass", "failed_rules": [], "warnings": []},
            "claims": labels,
            "verdict": verdict,
        },
    }


def policy_case() -> dict[str, Any]:
    return {
        **SHARED_POLICY,
        "tags": ["policy"],
        "session": copy.deepcopy(SESSION),
        "executor": {"final_answer": "x", "structured_output": {"schema_version": "executor_evidence_v2", "claims": claims("inv-r9")}},
        "verifier_response": {"json": {
            "verdict": "PASS", "groundedness_score": 0.9, "critical_fact_count": 2,
            "claim_checks": [
                {"claim_id": "C1", "verification": "direct_observation", "detail": "T1", "evidence_refs": [{"trace_ref": "T1"}]},
                {"claim_id": "C2", "verification": "direct_observation", "detail": "T2", "evidence_refs": []},
            ],
            "facts_checked": [], "rationale": "All grounded."}},
        "expected": {"parse_status": "valid", "gatekeeper": {"status": "fail", "failed_rules": ["evidence.invocation_ref"], "warnings": []},
                     "claims": {"C1": "unsupported", "C2": "direct_observation"}, "verdict": "REJECT", "model_verdict": "PASS"},
    }  # fmt: skip


def write_corpus(folder: Path, quality_ids: list[str] | None = None, with_policy: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for case_id in quality_ids or list(GOLD):
        (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(quality_case(case_id), sort_keys=False))
    if with_policy:
        (folder / "policy.yaml").write_text(yaml.safe_dump(policy_case(), sort_keys=False))
    return folder


def copy_corpus(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
