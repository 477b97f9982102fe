"""The store on a real PostgreSQL server (the image ships PostgreSQL 15): a SQLAlchemy URL is all it takes."""

from __future__ import annotations

import asyncio
import uuid

from harness.system.pipeline import verify_session
from harness.system.store import Store
from harness.system.verifiers.scripted import ScriptedVerifier
from tests.system.builders import INVOCATIONS, binding, claim, emission, output, reply


def test_postgres_store_persists_and_merges_like_sqlite(postgres_url: str) -> None:
    store = Store(postgres_url)
    ns = f"t{uuid.uuid4().hex[:8]}."  # its own ids: the cluster is shared by the session's tests, nothing is cleared
    try:
        store.add_session(ns + "other", invocations=INVOCATIONS)
        store.add_session(
            ns + "s-1", question="q", invocations=INVOCATIONS[:2], self_evaluation={"executor_self_check": {"ok": True}}
        )
        doc = output(claim("C1"), claim("C2", bindings=[binding("T3", "kubectl_events", ["inv-3"])]))
        ev = asyncio.run(verify_session(store, ns + "s-1", "q", emission(doc), ScriptedVerifier(reply_json=reply())))
        # inv-3 exists only in the other session: fabricated for this one
        assert ev.gatekeeper_result.failed_rules == ["evidence.invocation_ref"]
        assert ev.verdict.value == "REJECT"
        reopened = Store(postgres_url)
        persisted = reopened.self_evaluation(ns + "s-1")
        assert persisted["executor_self_check"] == {"ok": True}
        assert persisted["verifier_evaluation"]["gatekeeper_result"]["failed_rules"] == ["evidence.invocation_ref"]
        assert [i.id for i in reopened.invocations(ns + "s-1")] == ["inv-1", "inv-2"]
        reopened.close()
    finally:
        store.close()
