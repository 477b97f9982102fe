"""Persistence through SQLAlchemy Core: `diagnosis_session` and `tool_invocation` tables.

SQLite by default (in memory, or a file); any SQLAlchemy URL works, PostgreSQL
included. Writing the verifier evaluation merges into `self_evaluation`, so
sibling keys written by others survive. Core statements rather than the ORM:
the store is on every case's path and the ORM's unit of work cost more than
the rest of the harness together.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.pool import StaticPool

from harness.system.models import ToolInvocation, VerifierEvaluation

EVALUATION_KEY = "verifier_evaluation"

metadata = MetaData()

diagnosis_session = Table(
    "diagnosis_session",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("question", Text, nullable=False, default=""),
    Column("final_answer", Text, nullable=False, default=""),
    Column("structured_output_raw", Text, nullable=True),
    Column("self_evaluation", JSON, nullable=False),
)

tool_invocation = Table(
    "tool_invocation",
    metadata,
    Column("pk", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(200), ForeignKey("diagnosis_session.id"), nullable=False, index=True),
    Column("invocation_id", String(200), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("tool_name", String(200), nullable=False),
    Column("arguments", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    Column("result", Text, nullable=False, default=""),
    UniqueConstraint("session_id", "invocation_id"),
)


class Store:
    """A diagnosis store. `Store()` is a fresh in-memory SQLite database."""

    def __init__(self, url: str = "sqlite://") -> None:
        kwargs: dict[str, Any] = {}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
        self.engine = create_engine(url, **kwargs)
        metadata.create_all(self.engine)

    def add_session(
        self,
        session_id: str,
        question: str = "",
        invocations: Iterable[ToolInvocation] = (),
        self_evaluation: dict[str, Any] | None = None,
        final_answer: str = "",
        structured_output_raw: str | None = None,
    ) -> None:
        """Insert a session and its tool_invocation rows, in call order."""
        rows = [
            {
                "session_id": session_id,
                "invocation_id": inv.id,
                "seq": seq,
                "tool_name": inv.tool_name,
                "arguments": inv.arguments,
                "status": inv.status,
                "result": inv.result,
            }
            for seq, inv in enumerate(invocations)
        ]
        with self.engine.begin() as conn:
            conn.execute(
                insert(diagnosis_session).values(
                    id=session_id,
                    question=question,
                    final_answer=final_answer,
                    structured_output_raw=structured_output_raw,
                    self_evaluation=dict(self_evaluation or {}),
                )
            )
            if rows:
                conn.execute(insert(tool_invocation), rows)

    def invocations(self, session_id: str) -> list[ToolInvocation]:
        """The session's own tool_invocation rows, in call order."""
        query = (
            select(
                tool_invocation.c.invocation_id,
                tool_invocation.c.tool_name,
                tool_invocation.c.arguments,
                tool_invocation.c.status,
                tool_invocation.c.result,
            )
            .where(tool_invocation.c.session_id == session_id)
            .order_by(tool_invocation.c.seq)
        )
        with self.engine.connect() as conn:
            return [
                ToolInvocation.model_construct(
                    id=r.invocation_id,
                    tool_name=r.tool_name,
                    arguments=r.arguments or {},
                    status=r.status,
                    result=r.result,
                )
                for r in conn.execute(query)
            ]

    def self_evaluation(self, session_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(diagnosis_session.c.self_evaluation).where(diagnosis_session.c.id == session_id)
            ).scalar_one_or_none()
        if value is None:
            raise KeyError(f"no diagnosis_session {session_id!r}")
        return dict(value)

    def write_verifier_evaluation(self, session_id: str, evaluation: VerifierEvaluation) -> dict[str, Any]:
        """Merge the evaluation into `self_evaluation`, keeping sibling keys; return the result."""
        column = diagnosis_session.c.self_evaluation
        with self.engine.begin() as conn:
            current = conn.execute(select(column).where(diagnosis_session.c.id == session_id)).scalar_one_or_none()
            if current is None:
                raise KeyError(f"no diagnosis_session {session_id!r}")
            merged = {**current, EVALUATION_KEY: evaluation.model_dump(mode="json")}
            conn.execute(
                update(diagnosis_session).where(diagnosis_session.c.id == session_id).values(self_evaluation=merged)
            )
        return merged

    def clear(self) -> None:
        """Delete every row: the store is then as fresh as a new one (the runner reuses one per worker)."""
        with self.engine.begin() as conn:
            conn.execute(delete(tool_invocation))
            conn.execute(delete(diagnosis_session))

    def close(self) -> None:
        self.engine.dispose()
