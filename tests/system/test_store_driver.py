"""The private in-memory store's statements go straight to SQLite: it must read and write what the SQLAlchemy
path of a shared store does, and leave rows SQLAlchemy's JSON type reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select

from harness.system.models import ToolInvocation, VerifierEvaluation
from harness.system.pipeline import verify_session
from harness.system.store import Store, diagnosis_session, tool_invocation
from harness.system.verifiers.scripted import ScriptedVerifier
from tests.system.builders import INVOCATIONS, claim, emission, output, reply

ODD = [
    *INVOCATIONS,
    ToolInvocation(
        id="inv-odd", tool_name="odd", arguments={"n": [1, 2.5, None], "s": "é\"'", "d": {}}, status="success"
    ),
]


def an_evaluation() -> VerifierEvaluation:
    """A whole evaluation as the pipeline makes it, its rationale with characters JSON encodes specially."""
    store = Store()
    store.add_session("s-0", question="q", invocations=INVOCATIONS)
    verifier = ScriptedVerifier(reply_json={**reply(), "rationale": 'ünïcode \u2028 and "quotes"'})
    evaluation = asyncio.run(verify_session(store, "s-0", "q", emission(output(claim())), verifier))
    store.close()
    return evaluation


EVALUATION = an_evaluation()


def fill(store: Store) -> dict[str, object]:
    """The same writes on any store; returns what write_verifier_evaluation handed back."""
    store.add_session("s-1", question="q", invocations=ODD, self_evaluation={"sibling": {"k": [1, None]}})
    store.add_session("s-2", question="q2", invocations=INVOCATIONS[:1])
    return store.write_verifier_evaluation("s-1", EVALUATION)


@pytest.fixture
def stores(tmp_path: Path):
    private, shared = Store(), Store(f"sqlite:///{tmp_path / 'shared.db'}")
    assert private.private and not shared.private
    yield private, shared
    private.close()
    shared.close()


def test_the_private_store_reads_and_writes_as_a_shared_one(stores) -> None:
    private, shared = stores
    assert fill(private) == fill(shared)
    for session in ("s-1", "s-2"):
        assert private.invocations(session) == shared.invocations(session)
        assert private.self_evaluation(session) == shared.self_evaluation(session)
    assert [i.arguments for i in private.invocations("s-1")][-1] == ODD[-1].arguments


def test_the_private_stores_rows_read_back_through_sqlalchemy(stores) -> None:
    private, shared = stores
    fill(private)
    fill(shared)

    def rows(store: Store) -> tuple[list[tuple], list[tuple]]:
        with store.engine.connect() as conn:
            sessions = conn.execute(select(diagnosis_session).order_by(diagnosis_session.c.id)).all()
            calls = conn.execute(select(tool_invocation).order_by(tool_invocation.c.pk)).all()
        return [tuple(r) for r in sessions], [tuple(r) for r in calls]

    assert rows(private) == rows(shared)


def test_clear_and_missing_sessions_on_the_private_store(stores) -> None:
    private, _ = stores
    fill(private)
    private.clear()
    assert private.invocations("s-1") == []
    with pytest.raises(KeyError, match="s-1"):
        private.self_evaluation("s-1")
    with pytest.raises(KeyError, match="s-1"):
        private.write_verifier_evaluation("s-1", EVALUATION)


def test_a_failed_write_leaves_the_private_store_as_it_was(stores) -> None:
    private, _ = stores
    fill(private)
    with pytest.raises(Exception, match="UNIQUE"):  # the same invocation id twice in one session
        private.add_session("s-3", invocations=[INVOCATIONS[0], INVOCATIONS[0]])
    with pytest.raises(KeyError):
        private.self_evaluation("s-3")  # the session row of the failed write was rolled back with it
    assert len(private.invocations("s-1")) == len(ODD)


def test_the_private_stores_sql_is_what_the_tables_compile_to() -> None:
    """store_sql.py is generated from store_tables' SQLAlchemy statements (`python -m harness.system.store_tables`):
    the SQL has one home, and a change to the tables that was not regenerated fails here."""
    from harness.system import store_sql
    from harness.system.store_tables import compile_sqlite

    schema, statements = compile_sqlite()
    assert store_sql.SCHEMA == schema
    assert store_sql.STATEMENTS == statements
