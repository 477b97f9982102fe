"""Persistence and the pipeline: what reaches the verifier and what is written to self_evaluation."""

from __future__ import annotations

import asyncio
import json

from harness.system.models import PERSISTED_FIELDS, VerifierCall, VerifierInput
from harness.system.pipeline import verify_session
from harness.system.store import Store
from harness.system.verifiers.base import VerifierBase
from harness.system.verifiers.scripted import ScriptedVerifier
from tests.system.builders import INVOCATIONS, binding, claim, emission, output, reply


class RecordingVerifier(VerifierBase):
    """Returns a fixed reply and keeps the inputs it was given."""

    name = "recording"

    def __init__(self, text: str) -> None:
        self.text = text
        self.seen: list[VerifierInput] = []

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        self.seen.append(inputs)
        return VerifierCall(raw_reply=self.text, model=self.name)

    def describe(self) -> dict[str, object]:
        return {"name": self.name}


def run(store: Store, doc, verifier, session_id: str = "s-1"):
    return asyncio.run(verify_session(store, session_id, "Why 500s?", emission(doc), verifier))


def stored_store(session_id: str = "s-1", self_evaluation: dict | None = None) -> Store:
    store = Store()
    store.add_session(session_id, question="Why 500s?", invocations=INVOCATIONS, self_evaluation=self_evaluation)
    return store


def test_gatekeeper_result_available_to_verifier() -> None:
    verifier = RecordingVerifier(json.dumps(reply()))
    run(stored_store(), output(claim(bindings=[binding(ids=["inv-404"])])), verifier)
    payload = verifier.seen[0].model_dump(mode="json")
    assert payload["gatekeeper_result"]["status"] in {"pass", "warn", "fail"}
    assert payload["gatekeeper_result"]["status"] == "fail"
    for key in ("failed_rules", "warnings", "errors"):
        assert key in payload["gatekeeper_result"]
    assert payload["gatekeeper_result"]["failed_rules"] == ["evidence.invocation_ref"]


def test_structured_claims_are_the_primary_verification_target() -> None:
    verifier = RecordingVerifier(json.dumps(reply()))
    run(stored_store(), output(claim("C1")), verifier)
    seen = verifier.seen[0]
    assert seen.executor_output_parse_status.status == "valid"
    assert [c["claim_id"] for c in seen.claims] == ["C1"]
    assert seen.executor_final_answer == "prose answer"
    assert [t.trace_ref for t in seen.tool_trace_summary] == ["T1", "T2", "T3"]


def test_gatekeeper_reads_invocations_from_the_store_of_the_current_session() -> None:
    store = Store()
    store.add_session("other", invocations=INVOCATIONS)
    store.add_session("s-1", question="q", invocations=INVOCATIONS[:1])
    ev = run(
        store, output(claim(bindings=[binding("T2", "search_logs", ["inv-2"])])), ScriptedVerifier(reply_json=reply())
    )
    assert ev.gatekeeper_result.failed_rules == ["evidence.invocation_ref"]
    assert [t.source_invocation_ids for t in ev.tool_trace_summary] == [["inv-1"]]


def test_claim_checks_written_to_self_evaluation() -> None:
    store = stored_store(self_evaluation={"executor_self_check": {"ok": True}})
    run(store, output(claim()), ScriptedVerifier(reply_json=reply()))
    persisted = store.self_evaluation("s-1")
    evaluation = persisted["verifier_evaluation"]
    assert persisted["executor_self_check"] == {"ok": True}
    assert evaluation["claim_checks"][0]["claim_id"] == "C1"
    assert evaluation["facts_checked"][0]["verification"] == "direct_evidence"
    for key in (
        "verdict",
        "groundedness_score",
        "rationale",
        "executor_output_parse_status",
        "tool_trace_summary",
        "gatekeeper_result",
    ):
        assert key in evaluation


def test_gatekeeper_result_written_to_self_evaluation() -> None:
    store = stored_store(self_evaluation={"other": 1})
    run(store, output(claim(bindings=[binding(ids=["inv-404"])])), ScriptedVerifier(reply_json=reply()))
    evaluation = store.self_evaluation("s-1")["verifier_evaluation"]
    assert evaluation["gatekeeper_result"]["failed_rules"] == ["evidence.invocation_ref"]
    assert set(PERSISTED_FIELDS) <= set(evaluation)
    assert evaluation["verdict"] == "REJECT" and evaluation["model_verdict"] == "PASS"


def test_rewriting_the_evaluation_keeps_siblings_and_replaces_itself(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.add_session("s-1", question="q", invocations=INVOCATIONS, self_evaluation={"keep": [1, 2]})
    run(store, output(claim()), ScriptedVerifier(reply_json=reply("PASS")))
    run(store, output(claim()), ScriptedVerifier(reply_json=reply("REJECT")))
    reopened = Store(f"sqlite:///{tmp_path / 'store.db'}")
    persisted = reopened.self_evaluation("s-1")
    assert persisted["keep"] == [1, 2]
    assert persisted["verifier_evaluation"]["verdict"] == "REJECT"


def test_invocation_ids_need_only_be_unique_within_a_session() -> None:
    store = Store()
    store.add_session("a", invocations=INVOCATIONS)
    store.add_session("b", invocations=INVOCATIONS)
    assert [i.id for i in store.invocations("b")] == ["inv-1", "inv-2", "inv-3"]
