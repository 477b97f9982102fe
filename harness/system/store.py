"""Persistence through SQLAlchemy: `diagnosis_session` and `tool_invocation` tables.

SQLite by default (in memory, or a file); any SQLAlchemy URL works, PostgreSQL
included. Writing the verifier evaluation merges into `self_evaluation`, so
sibling keys written by others survive.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.pool import StaticPool

from harness.system.models import ToolInvocation, VerifierEvaluation

EVALUATION_KEY = "verifier_evaluation"


class Base(DeclarativeBase):
    pass


class DiagnosisSessionRow(Base):
    __tablename__ = "diagnosis_session"
    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    question: Mapped[str] = mapped_column(Text, default="")
    final_answer: Mapped[str] = mapped_column(Text, default="")
    structured_output_raw: Mapped[str | None] = mapped_column(Text, nullable=True)
    self_evaluation: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class ToolInvocationRow(Base):
    __tablename__ = "tool_invocation"
    __table_args__ = (UniqueConstraint("session_id", "invocation_id"),)
    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("diagnosis_session.id"), index=True)
    invocation_id: Mapped[str] = mapped_column(String(200))
    seq: Mapped[int] = mapped_column(Integer)
    tool_name: Mapped[str] = mapped_column(String(200))
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(20))
    result: Mapped[str] = mapped_column(Text, default="")


class Store:
    """A diagnosis store. `Store()` is a fresh in-memory SQLite database."""

    def __init__(self, url: str = "sqlite://") -> None:
        kwargs: dict[str, Any] = {}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
        self.engine = create_engine(url, **kwargs)
        Base.metadata.create_all(self.engine)

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
        with Session(self.engine) as db, db.begin():
            db.add(
                DiagnosisSessionRow(
                    id=session_id,
                    question=question,
                    final_answer=final_answer,
                    structured_output_raw=structured_output_raw,
                    self_evaluation=dict(self_evaluation or {}),
                )
            )
            db.flush()
            db.add_all(
                ToolInvocationRow(
                    session_id=session_id,
                    invocation_id=inv.id,
                    seq=seq,
                    tool_name=inv.tool_name,
                    arguments=inv.arguments,
                    status=inv.status,
                    result=inv.result,
                )
                for seq, inv in enumerate(invocations)
            )

    def invocations(self, session_id: str) -> list[ToolInvocation]:
        """The session's own tool_invocation rows, in call order."""
        with Session(self.engine) as db:
            rows = db.scalars(
                select(ToolInvocationRow)
                .where(ToolInvocationRow.session_id == session_id)
                .order_by(ToolInvocationRow.seq)
            )
            return [
                ToolInvocation(
                    id=r.invocation_id,
                    tool_name=r.tool_name,
                    arguments=r.arguments or {},
                    status=r.status,
                    result=r.result,
                )  # type: ignore[arg-type]
                for r in rows
            ]

    def self_evaluation(self, session_id: str) -> dict[str, Any]:
        with Session(self.engine) as db:
            row = db.get(DiagnosisSessionRow, session_id)
            if row is None:
                raise KeyError(f"no diagnosis_session {session_id!r}")
            return dict(row.self_evaluation or {})

    def write_verifier_evaluation(self, session_id: str, evaluation: VerifierEvaluation) -> dict[str, Any]:
        """Merge the evaluation into `self_evaluation`, keeping sibling keys; return the result."""
        with Session(self.engine) as db, db.begin():
            row = db.get(DiagnosisSessionRow, session_id)
            if row is None:
                raise KeyError(f"no diagnosis_session {session_id!r}")
            merged = dict(row.self_evaluation or {})
            merged[EVALUATION_KEY] = evaluation.model_dump(mode="json")
            row.self_evaluation = merged
            return merged

    def close(self) -> None:
        self.engine.dispose()
