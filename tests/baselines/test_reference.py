"""The reference baseline end to end: the reply contract, each named signal, switching signals off, its own verdict."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.baselines.reference import SIGNALS, VERSION, ReferenceSettings, ReferenceVerifier, build_reply
from harness.baselines.reference.text import LEXICON_PATH
from harness.corpus.loader import load_cases
from harness.run.execute import run_case
from harness.system.models import (
    Derivability,
    ExecutorEmission,
    ToolInvocation,
    Verdict,
    VerifierCall,
    VerifierInput,
)
from harness.system.pipeline import conclude, prepare
from harness.system.reply import parse_verifier_reply
from harness.system.verifiers.base import Verifier

D = Derivability
EXAMPLES = Path(__file__).resolve().parents[1] / "corpus" / "data"  # the spec's two example cases, copied

ALERTS = '[{"alertname": "HighErrorRate", "service": "order-service", "value": "12.4%", "startsAt": "10:02"}]'
LOGS = (
    "10:02:11 ERROR order-service-7d9f8-abcde HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms.\n"
    "10:02:14 ERROR order-service-7d9f8-abcde HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms."
)
EVENTS = (
    "LAST SEEN   TYPE      REASON      OBJECT                               MESSAGE\n"
    "4m          Warning   OOMKilling  pod/order-service-7d9f8-abcde        Memory cgroup out of memory\n"
    "9m          Warning   OOMKilling  pod/order-service-7d9f8-k2m7q        Memory cgroup out of memory\n"
    "NAME                          READY   STATUS    RESTARTS\n"
    "order-service-7d9f8-abcde     1/1     Running   1\n"
    "order-service-7d9f8-k2m7q     1/1     Running   1\n"
    "order-service-7d9f8-p9x2w     1/1     Running   0\n"
    "order-service-7d9f8-t5r8n     1/1     Running   0\n"
    "order-service-7d9f8-w3c6v     1/1     Running   0\n"
)
SESSION = [
    ToolInvocation(id="inv-1", tool_name="query_prometheus_alerts", result=ALERTS),
    ToolInvocation(id="inv-2", tool_name="search_logs", result=LOGS),
    ToolInvocation(id="inv-3", tool_name="kubectl_get_events", result=EVENTS),
    ToolInvocation(id="inv-4", tool_name="get_deploy_history", status="error", result="rpc error: Unavailable"),
]
TOOLS = {"T1": ("query_prometheus_alerts", "inv-1"), "T2": ("search_logs", "inv-2"),
         "T3": ("kubectl_get_events", "inv-3"), "T4": ("get_deploy_history", "inv-4")}  # fmt: skip


def claim(statement: str, ref: str = "T1", cid: str = "C1", **extra: Any) -> dict[str, Any]:
    tool, inv = TOOLS.get(ref, ("search_logs", "inv-9"))
    return {
        "claim_id": cid,
        "statement": statement,
        "status": extra.pop("status", "confirmed"),
        "critical": extra.pop("critical", True),
        "evidence_bindings": extra.pop(
            "bindings", [{"trace_ref": ref, "tool_name": tool, "source_invocation_ids": [inv]}]
        ),
        **extra,
    }


def inputs(*claims: dict[str, Any], invocations: list[ToolInvocation] = SESSION, raw: str | None = None,
           answer: str = "prose") -> VerifierInput:  # fmt: skip
    doc = raw if raw is not None else json.dumps({"schema_version": "executor_evidence_v2", "claims": list(claims)})
    emission = ExecutorEmission(final_answer=answer, structured_output_raw=doc)
    return prepare("Why does order-service fail?", emission, invocations).inputs


def classify(
    statement: str, ref: str = "T1", settings: ReferenceSettings | None = None, **extra: Any
) -> tuple[Derivability, str]:
    check = build_reply(inputs(claim(statement, ref, **extra)), settings).claim_checks[0]
    return check.verification, check.detail


# --- the protocol, the reply contract, the manifest --------------------------------


def test_it_is_a_verifier_that_describes_its_version_signals_and_lexicon() -> None:
    verifier = ReferenceVerifier(ReferenceSettings().without("hedge"))
    assert isinstance(verifier, Verifier)
    described = verifier.describe()
    assert described["name"] == "reference" and described["version"] == VERSION
    assert "hedge" not in described["signals"] and "scope" in described["signals"]
    assert {"direct_coverage", "inference_coverage", "lexicon"} <= set(described)


def test_the_committed_baseline_was_made_by_this_reference_verifier() -> None:
    """The manifest of the committed baseline records what the code describes (version, lexicon digest, settings):
    a heuristic changed without a new version and a refreshed baseline fails here."""
    manifest = json.loads(
        (Path(__file__).resolve().parents[2] / "reports/baselines/reference/manifest.json").read_text()
    )
    assert manifest["verifiers"]["reference"] == ReferenceVerifier(ReferenceSettings()).describe()


def test_an_unknown_signal_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown signal.*hedg.*known"):
        ReferenceSettings(signals=("hedg",))


def test_verify_returns_the_exact_reply_contract() -> None:
    call = asyncio.run(ReferenceVerifier().verify(inputs(claim("order-service HighErrorRate is 12.4% since 10:02"))))
    assert isinstance(call, VerifierCall)
    assert call.model == "reference" and call.usage.total_tokens == 0 and call.latency_ms > 0
    reply, status = parse_verifier_reply(call)
    assert status.status == "valid" and reply is not None
    assert set(json.loads(call.raw_reply or "")) == {
        "verdict", "groundedness_score", "critical_fact_count", "claim_checks", "facts_checked", "rationale",
    }  # fmt: skip
    assert reply.claim_checks[0].detail.startswith("reference/coverage:")
    assert reply.facts_checked[0].verification.value == "direct_evidence"
    assert "Heuristic reference baseline" in reply.rationale


def test_evidence_refs_are_filled_from_the_trace() -> None:
    binding = {"trace_ref": "T2", "tool_name": "search_logs"}  # no invocation ids given
    check = build_reply(inputs(claim("requests time out after 30000ms", bindings=[binding]))).claim_checks[0]
    ref = check.evidence_refs[0]
    assert (ref.trace_ref, ref.tool_name, ref.source_invocation_ids) == ("T2", "search_logs", ["inv-2"])


@pytest.mark.parametrize(("raw", "status"), [("{not json", "malformed"), (None, "missing")])
def test_unparsed_output_gets_no_checks(raw: str | None, status: str) -> None:
    emission = ExecutorEmission(final_answer="order-service is fine", structured_output_raw=raw)
    reply = build_reply(prepare("q", emission, SESSION).inputs)
    assert reply.verdict == Verdict.LOW_CONFID and reply.claim_checks == [] and reply.groundedness_score == 0.0


def test_deterministic_and_blind_to_the_prose_answer() -> None:
    c = claim("order-service p99 latency is 4.2 s")
    first = build_reply(inputs(c, answer="order-service p99 latency is 4.2 s, as the dashboard shows"))
    second = build_reply(inputs(c, answer="nothing"))
    assert first == second
    assert first.claim_checks[0].verification != D.DIRECT_OBSERVATION


# --- each signal: it decides, its id is in the detail, and switched off it does not --


SIGNAL_CASES = [
    ("external_topic", "A marketing campaign drove the order-service timeouts", "T2", D.EXTERNAL_UNKNOWN),
    ("identifier", "order-service fails with ORA-00060 when the connection is not available", "T2", D.CONTRADICTED),
    ("number", "order-service 5xx rate is 12.9% since 10:02", "T1", D.CONTRADICTED),
    ("name", "order-service connections were held by Contoso Analytics", "T2", D.UNSUPPORTED),
    ("scope", "All order-service pods were OOMKilled", "T3", D.OVERSTATED),
    ("causal", "The Hikari pool timeout is the root cause of the order-service HighErrorRate", "T2", D.OVERSTATED),
    ("certainty", "The order-service 5xx rate is definitely 12.4% since 10:02", "T1", D.OVERSTATED),
    ("hedge", "The connection pool of order-service is probably exhausted, so requests time out", "T2",
     D.REASONABLE_INFERENCE),
]  # fmt: skip


def test_every_registered_signal_has_a_case_here() -> None:
    decisive = {s.id for s in SIGNALS.values() if s.check is not None}
    assert decisive == {name for name, *_ in SIGNAL_CASES}


@pytest.mark.parametrize(("signal_id", "statement", "ref", "expected"), SIGNAL_CASES, ids=lambda v: str(v)[:20])
def test_a_signal_decides_and_can_be_switched_off(signal_id: str, statement: str, ref: str, expected: D) -> None:
    cls, detail = classify(statement, ref)
    assert (cls, detail.split(":")[0]) == (expected, f"reference/{signal_id}")
    _, without = classify(statement, ref, ReferenceSettings().without(signal_id))
    assert not without.startswith(f"reference/{signal_id}:")


def test_novel_words_counts_only_what_the_question_does_not_hold() -> None:
    doc = json.dumps(
        {"schema_version": "executor_evidence_v2", "claims": [claim("order-service fails with 12.4% 5xx")]}
    )
    emission = ExecutorEmission(final_answer="x", structured_output_raw=doc)
    reply = build_reply(prepare("Why does order-service fail?", emission, SESSION).inputs)
    assert "of its 2 content words" in reply.claim_checks[0].detail  # 12.4 and 5xx; order-service and fail are asked
    off = build_reply(
        prepare("Why does order-service fail?", emission, SESSION).inputs, ReferenceSettings().without("novel_words")
    )
    assert "of its 4 content words" in off.claim_checks[0].detail


def test_direct_observation_from_coverage() -> None:
    cls, detail = classify("order-service HighErrorRate at 12.4% since 10:02")
    assert cls == D.DIRECT_OBSERVATION and detail.startswith("reference/coverage: T1 states")


def test_an_unstated_figure_or_id_keeps_a_claim_from_direct() -> None:
    cls, detail = classify("order-service HighErrorRate value 12.4% startsAt 10:02 in eu-west-3")
    assert cls == D.REASONABLE_INFERENCE and "not stated: eu-west-3" in detail


def test_a_figure_one_unit_step_away_is_stated() -> None:
    cls, _ = classify("order-service requests time out after 30 s waiting for a connection", "T2")
    assert cls == D.DIRECT_OBSERVATION


def test_a_swapped_pod_is_contradicted() -> None:
    cls, detail = classify("order-service-7d9f8-zz9zz timed out getting a connection at 10:02", "T2")
    assert cls == D.CONTRADICTED and "sibling" in detail


def test_a_short_claim_is_direct_only_when_every_word_is_stated() -> None:
    cls, detail = classify("HighErrorRate in Lisbon", "T1", ReferenceSettings().without("name"))
    assert cls != D.DIRECT_OBSERVATION and "lisbon" in detail


def test_binding_to_nothing_is_unsupported_through_the_policys_rule() -> None:
    cls, detail = classify("order-service 5xx rate is 12.4%", "T9")  # inv-9 is no row of the session
    assert (cls, detail) == (D.UNSUPPORTED, "reference/no_evidence: none of its bindings resolves")


def test_evidence_from_a_failed_call_is_not_support() -> None:
    cls, detail = classify("rpc error Unavailable", "T4")
    assert cls == D.UNSUPPORTED and "ended in error" in detail


def test_the_lexicon_is_one_file_of_generic_words() -> None:
    import tomllib

    data = tomllib.loads(LEXICON_PATH.read_text(encoding="utf-8"))
    words = [w for kind in data["cues"].values() for w in kind] + [w for t in data["external"] for w in t["claim"]]
    assert words and all(w == w.lower() for w in words)  # no capitalised product, vendor or company names
    assert not list(LEXICON_PATH.parent.glob("*.json")) and len(list(LEXICON_PATH.parent.glob("*.toml"))) == 1


# --- the verdict is the baseline's own; the policy does the rest ---------------------


def test_its_own_verdict_follows_critical_claims() -> None:
    passing = build_reply(inputs(claim("order-service HighErrorRate at 12.4% since 10:02")))
    assert passing.verdict == Verdict.PASS and passing.groundedness_score == 1.0
    rejecting = build_reply(
        inputs(claim("order-service 5xx rate is 12.4%"), claim("requests time out after 3000 ms", "T2", cid="C2"))
    )
    assert rejecting.verdict == Verdict.REJECT and rejecting.groundedness_score == 0.5
    inference_only = build_reply(
        inputs(claim("The connection pool of order-service is probably exhausted, so requests time out", "T2"))
    )
    assert inference_only.verdict == Verdict.PASS  # its own rule; the policy's claim guard makes it LOW_CONFID


def test_a_failed_gatekeeper_is_the_policys_to_apply() -> None:
    c = claim("order-service HighErrorRate at 12.4% since 10:02")
    doc = json.dumps({"schema_version": "executor_evidence_v2", "claims": [c], "diagnosis_summary": "x"})
    emission = ExecutorEmission(final_answer="x", structured_output_raw=doc)
    prepared = prepare("Why does order-service fail?", emission, SESSION)
    assert prepared.gatekeeper.status == "fail"
    assert build_reply(prepared.inputs).verdict == Verdict.PASS  # the model verdict is its own
    call = asyncio.run(ReferenceVerifier().verify(prepared.inputs))
    evaluation = conclude(prepared, call)
    assert evaluation.model_verdict == Verdict.PASS and evaluation.verdict == Verdict.LOW_CONFID
    assert [a.step for a in evaluation.adjustments] == ["policy.gatekeeper_fail"]


# --- the spec's example cases, through the whole system ------------------------------


def run_example(name: str):  # type: ignore[no-untyped-def]
    (case,) = [c for c in load_cases([EXAMPLES]) if c.id == name]
    evaluation, _ = asyncio.run(run_case(case, ReferenceVerifier()))
    return {c.claim_id: c.verification for c in evaluation.claim_checks}, evaluation


def test_example_fabricated_invocation_case() -> None:
    classes, evaluation = run_example("example-redis-fabricated-id")
    assert classes["C1"] == D.UNSUPPORTED  # its binding names an invocation of no session
    assert evaluation.verdict in (Verdict.LOW_CONFID, Verdict.REJECT)


def test_editing_the_baseline_leaves_the_replay_fingerprint_alone(tmp_path: Path) -> None:
    from harness.run.replay import fingerprint_of

    pkg = tmp_path / "harness"
    (pkg / "system").mkdir(parents=True)
    (pkg / "system" / "policy.py").write_text("RULE = 1\n")
    (pkg / "baselines" / "reference").mkdir(parents=True)
    (pkg / "baselines" / "reference" / "lexicon.toml").write_text("stopwords = ''\n")
    before = fingerprint_of(pkg)
    (pkg / "baselines" / "reference" / "lexicon.toml").write_text("stopwords = 'a an'\n")
    (pkg / "baselines" / "reference" / "signals.py").write_text("SIGNALS = {}\n")
    assert fingerprint_of(pkg) == before
    (pkg / "system" / "policy.py").write_text("RULE = 2\n")
    assert fingerprint_of(pkg) != before  # the same check sees a system edit
