"""Test data for the report: result records built by hand, and a corpus whose text tries to inject markup."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from harness.run.log import GatekeeperOutcome, Gold, RecordSummary, ResultRecord
from tests.run.corpus_builder import SESSION, claims, write_corpus

SPEC_PASS = "chat-verifier-agent/verifier-shall-fact-check-executor-answers/pass-verdict-when-all-claims-have-evidence"
SPEC_REJECT = (
    "chat-verifier-agent/verifier-shall-fact-check-executor-answers/reject-verdict-when-claims-contradict-evidence"
)
SPEC_MALFORMED = "chat-verifier-agent/verifier-shall-fact-check-executor-answers/malformed-structured-output-cannot-pass-through-natural-language-fallback"

# Each payload would set window.__pwned (or the title) if it ever ran as markup.
QUESTION_XSS = "<script>window.__pwned='question';document.title='pwned'</script><img src=x onerror=\"window.__pwned='question-img'\"> why?"
TOOL_XSS = "</script><script>window.__pwned='tool'</script><img src=x onerror=window.__pwned='tool-img'> 5xx=12%"
REPLY_XSS = "<script>window.__pwned='reply'</script><img src=x onerror=window.__pwned='reply-img'> not json {"
STATEMENT_XSS = "<b onmouseover=window.__pwned='claim'>bold</b> claim"
HOSTILE_MODEL = "openai:<img src=x onerror=window.__pwned='variant'>"


def record(
    case_id: str = "c1",
    variant: str = "v",
    epoch: int = 1,
    kind: str = "quality",
    verdict: str | None = "PASS",
    gold_verdict: list[str] | None = None,
    claims_got: dict[str, str] | None = None,
    gold_claims: dict[str, list[str]] | None = None,
    error: str | None = None,
    tags: list[str] | None = None,
    spec: list[str] | None = None,
    **extra: Any,
) -> ResultRecord:
    """A results_v1 record with only what a test names; the rest is a plausible default."""
    return ResultRecord(
        case_id=case_id,
        case_hash=f"h-{case_id}",
        kind=kind,  # type: ignore[arg-type]
        variant=variant,
        epoch=epoch,
        dataset=extra.pop("dataset", "verifier-bench"),
        tags=tags or [],
        spec=spec or [SPEC_PASS],
        parse_status="valid",
        gatekeeper=GatekeeperOutcome(status="pass", failed_rules=[], warnings=[]),
        claims=claims_got if claims_got is not None else {"C1": "direct_observation"},
        critical_claims=["C1"],
        executor_claim_ids=["C1"],
        model_verdict=extra.pop("model_verdict", verdict),
        verdict=verdict,
        error=error,
        gold=Gold(
            parse_status="valid",
            gatekeeper={"status": "pass", "failed_rules": [], "warnings": []},
            claims=gold_claims if gold_claims is not None else {"C1": ["direct_observation"]},
            verdict=gold_verdict or ["PASS"],
            model_verdict=None,
        ),
        **extra,
    )


def as_dict(rec: ResultRecord) -> dict[str, Any]:
    return rec.model_dump(mode="json")


def outcome(rec: ResultRecord) -> RecordSummary:
    """What the report reads of a record for every result, parsed from its results.jsonl line."""
    return RecordSummary.model_validate_json(rec.model_dump_json())


def hostile_cases() -> list[dict[str, Any]]:
    """A quality case and a policy case whose question, tool result, claim and scripted reply carry markup."""
    session = copy.deepcopy(SESSION)
    session["question"] = QUESTION_XSS
    session["tool_invocations"][0]["result"] = TOOL_XSS
    cl = claims()
    cl[0]["statement"] = STATEMENT_XSS
    structured = {"schema_version": "executor_evidence_v2", "claims": cl}
    quality = {
        "id": "xss-quality",
        "title": "Markup <script>window.__pwned='title'</script> in every field",
        "spec": [SPEC_PASS],
        "tags": ["xss", "<i>tag</i>"],
        "session": session,
        "executor": {
            "final_answer": "<iframe src=javascript:window.__pwned='answer'>",
            "structured_output": structured,
        },
        "expected": {
            "parse_status": "valid",
            "gatekeeper": {"status": "pass", "failed_rules": [], "warnings": []},
            "claims": {"C1": "direct_observation", "C2": "direct_observation"},
            "verdict": "PASS",
        },
    }
    policy = {
        "id": "xss-policy-raw-reply",
        "title": "A scripted reply that is markup, not JSON",
        "spec": [SPEC_MALFORMED],
        "tags": ["xss"],
        "session": copy.deepcopy(session),
        "executor": {"final_answer": "x", "structured_output": copy.deepcopy(structured)},
        "verifier_response": {"raw": REPLY_XSS},
        "expected": {
            "parse_status": "valid",
            "gatekeeper": {"status": "pass", "failed_rules": [], "warnings": []},
            "verdict": "LOW_CONFID",
        },
    }
    return [quality, policy]


def write_hostile_corpus(folder: Path) -> Path:
    """The hand-computed corpus of tests/run plus the two hostile cases."""
    write_corpus(folder)
    for case in hostile_cases():
        (folder / f"{case['id']}.yaml").write_text(yaml.safe_dump(case, sort_keys=False, allow_unicode=True))
    return folder
