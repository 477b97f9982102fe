"""Persistence through SQLAlchemy Core: `diagnosis_session` and `tool_invocation` tables.

SQLite by default (in memory, or a file); any SQLAlchemy URL works, PostgreSQL
included (through psycopg 3: `postgresql://` is read as `postgresql+psycopg://`, see `store_url`). Writing the verifier evaluation merges into `self_evaluation`, so
sibling keys written by others survive. Core statements rather than the ORM:
the store is on every case's path and the ORM's unit of work cost more than
the rest of the harness together. The statements are built once, with bound
parameters, so SQLAlchemy compiles and caches each one once, not per case.

The tables and statements live in `harness.system.store_tables`. A private in-memory store (the runner's
default: one per worker, one case at a time) sends the same statements, compiled to SQLite's SQL
(`harness.system.store_sql`, generated from them), straight to its own SQLite connection: SQLAlchemy's execution
machinery around each statement cost more than the statements themselves, seven times per case, and importing
SQLAlchemy delayed a run's first request. SQLAlchemy is imported for a store at a URL, or when a
private store's `engine` is asked for.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from harness import UsageError
from harness.system.models import ToolInvocation, VerifierEvaluation
from harness.system.store_names import EVALUATION_KEY as EVALUATION_KEY  # re-exported: the names' home is there
from harness.system.store_names import KEY_LENGTH as KEY_LENGTH
from harness.system.store_names import MEMORY_URL as MEMORY_URL

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine


class StoreURLError(UsageError):
    """A store URL that names no database this store can open (exit code 2)."""


def store_url(text: str) -> str:
    """A SQLAlchemy URL from what a user wrote: a URL, `postgresql://...` (read as psycopg 3's
    `postgresql+psycopg://...`), or a path, which names a SQLite file."""
    text = text.strip()
    if not text:
        raise StoreURLError("the store URL is empty")
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    scheme, rest = text.split("://", 1)
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    return text


def public_store_url(url: str) -> str:
    """The URL with its password hidden: what may be logged and recorded."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads: say nothing of what it holds
        return "<unreadable store URL>"


def _tables() -> ModuleType:
    """The SQLAlchemy tables and statements (imported when first needed: a private store never needs them)."""
    from harness.system import store_tables

    return store_tables


def __getattr__(name: str) -> Any:
    """The tables and statements (`metadata`, `diagnosis_session`, `tool_invocation`, `_UPDATE_EVALUATION`, ...),
    from `store_tables`: SQLAlchemy loads on first use."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return getattr(_tables(), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


@dataclass(frozen=True)
class _Compiled:
    """A statement as the driver takes it: its SQL text and the order of its bound values."""

    sql: str
    keys: tuple[str, ...]


@functools.cache
def _sqlite_statements() -> dict[str, _Compiled]:
    """The private store's statements as SQLite's SQL (generated from `store_tables`' statements)."""
    from harness.system.store_sql import STATEMENTS

    return {name: _Compiled(sql, tuple(keys)) for name, (sql, keys) in STATEMENTS.items()}


_JSON_COLUMNS = frozenset({"self_evaluation", "arguments"})
"""Stored as JSON text: the driver path encodes them as SQLAlchemy's JSON type does (`json.dumps`)."""


@dataclass(frozen=True)
class NewSession:
    """A diagnosis_session row to insert, with its tool_invocation rows in call order."""

    id: str
    question: str = ""
    invocations: Sequence[ToolInvocation] = ()
    self_evaluation: dict[str, Any] | None = None
    final_answer: str = ""
    structured_output_raw: str | None = None


class StoreUnavailable(RuntimeError):
    """The store cannot be reached or written (a server gone, a connection dropped, a read-only or vanished SQLite
    file): not this case's fault. The run records it as a `store_unavailable` error, and its breaker stops the run
    when several cases in a row get it (`harness.run.endpoints.StoreDown`)."""


def _unavailable(exc: BaseException) -> bool:
    """Whether a store call failed because the database is unreachable or unwritable (SQLAlchemy's operational
    and interface errors), not because of what this case sent."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


class Store:
    """A diagnosis store. `Store()` is a fresh in-memory SQLite database; `Store(url)` any SQLAlchemy URL."""

    def __init__(self, url: str = MEMORY_URL) -> None:
        self.url = url
        self.private = url in (MEMORY_URL, "sqlite:///:memory:")
        """An in-memory database only this store sees (anything else may be shared with other workers and runs)."""
        self._engine: Engine | None = None
        self._conn: Connection | None = None
        self._driver_conn: sqlite3.Connection | None = None
        """The private store's SQLite connection, used directly (`_driver`); its `engine` wraps the same one."""
        if self.private:  # a new empty database: the tables' DDL, compiled once, without create_all's checks
            from harness.system.store_sql import SCHEMA

            self._driver_conn = sqlite3.connect(":memory:", check_same_thread=False)
            with self._driver() as cursor:
                for ddl in SCHEMA:
                    cursor.execute(ddl)
        else:
            _tables().metadata.create_all(self.engine)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine of this store (a private store's is made on first use, over its own connection)."""
        if self._engine is None:
            from sqlalchemy import create_engine
            from sqlalchemy.pool import StaticPool

            if self.private:
                driver = self._driver_conn
                self._engine = create_engine("sqlite://", creator=lambda: driver, poolclass=StaticPool)
            else:
                self._engine = create_engine(self.url)
        return self._engine

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One transaction on the store's own connection, opened once and held until `close`.

        Checking a pooled connection out and back in (and the reset on return) cost more than the statements
        of a case: this store is on every case's path. One connection means one thread: a store is not shared
        between threads (the runner gives each worker its own, all on one event loop).
        """
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self.engine.connect()
            with self._conn.begin():
                yield self._conn
        except Exception as exc:
            if not _unavailable(exc):
                raise
            conn, self._conn = self._conn, None  # the next case connects again (the store may be back by then)
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.invalidate()
            detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
            raise StoreUnavailable(
                f"the store {public_store_url(self.url)} failed: {detail[0] if detail else type(exc).__name__}"
            ) from exc

    @contextlib.contextmanager
    def _driver(self) -> Iterator[sqlite3.Cursor]:
        """A private store's transaction straight on its SQLite connection: committed on success, rolled back
        on error, as `_transaction` does. None when this store is not private (`_transaction` serves it)."""
        if self._driver_conn is None:
            raise RuntimeError("the store is closed")
        cursor = self._driver_conn.cursor()
        try:
            yield cursor
        except BaseException:
            self._driver_conn.rollback()
            raise
        else:
            self._driver_conn.commit()
        finally:
            cursor.close()

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
        self.add_sessions(
            [NewSession(session_id, question, tuple(invocations), self_evaluation, final_answer, structured_output_raw)]
        )

    def add_sessions(self, sessions: Iterable[NewSession], replace: bool = False) -> None:
        """Insert sessions and their tool_invocation rows in one transaction; with `replace`, the rows of these
        session ids (and only those) are deleted first, in the same transaction.

        One transaction and one statement per table, not one per session: loading a case's sessions is on
        every case's path.
        """
        session_rows: list[dict[str, Any]] = []
        invocation_rows: list[dict[str, Any]] = []
        for new in sessions:
            session_rows.append(
                {
                    "id": new.id,
                    "question": new.question,
                    "final_answer": new.final_answer,
                    "structured_output_raw": new.structured_output_raw,
                    "self_evaluation": dict(new.self_evaluation or {}),
                }
            )
            invocation_rows.extend(
                {
                    "session_id": new.id,
                    "invocation_id": inv.id,
                    "seq": seq,
                    "tool_name": inv.tool_name,
                    "arguments": inv.arguments,
                    "status": inv.status,
                    "result": inv.result,
                }
                for seq, inv in enumerate(new.invocations)
            )
        if self.private and not replace:
            sql = _sqlite_statements()
            with self._driver() as cursor:
                if session_rows:
                    statement = sql["insert_session"]
                    cursor.executemany(statement.sql, [_driver_row(statement, r) for r in session_rows])
                if invocation_rows:
                    statement = sql["insert_invocations"]
                    cursor.executemany(statement.sql, [_driver_row(statement, r) for r in invocation_rows])
            return
        with self._transaction() as conn:
            if replace and session_rows:
                ids = {"b_ids": [row["id"] for row in session_rows]}
                conn.execute(_tables()._DELETE_INVOCATIONS_OF, ids)
                conn.execute(_tables()._DELETE_SESSIONS_OF, ids)
            if session_rows:
                conn.execute(_tables()._INSERT_SESSION, session_rows)
            if invocation_rows:
                conn.execute(_tables()._INSERT_INVOCATIONS, invocation_rows)

    def invocations(self, session_id: str) -> list[ToolInvocation]:
        """The session's own tool_invocation rows, in call order."""
        if self.private:
            with self._driver() as cursor:
                rows = cursor.execute(_sqlite_statements()["select_invocations"].sql, (session_id,)).fetchall()
            return [
                ToolInvocation.model_construct(
                    id=invocation_id,
                    tool_name=tool_name,
                    arguments=(None if arguments is None else json.loads(arguments)) or {},
                    status=status,
                    result=result,
                )
                for invocation_id, tool_name, arguments, status, result in rows
            ]
        with self._transaction() as conn:
            return [
                ToolInvocation.model_construct(
                    id=r.invocation_id,
                    tool_name=r.tool_name,
                    arguments=r.arguments or {},
                    status=r.status,
                    result=r.result,
                )
                for r in conn.execute(_tables()._SELECT_INVOCATIONS, {"b_session": session_id})
            ]

    def self_evaluation(self, session_id: str) -> dict[str, Any]:
        value = self._stored_evaluation(session_id)
        if value is None:
            raise KeyError(f"no diagnosis_session {session_id!r}")
        return dict(value)

    def write_verifier_evaluation(self, session_id: str, evaluation: VerifierEvaluation) -> dict[str, Any]:
        """Merge the evaluation into `self_evaluation`, keeping sibling keys; return the result."""
        if self.private:
            sql = _sqlite_statements()
            with self._driver() as cursor:
                found = cursor.execute(sql["select_evaluation"].sql, (session_id,)).fetchone()
                if found is None:
                    raise KeyError(f"no diagnosis_session {session_id!r}")
                merged = {**_json_value(found[0]), EVALUATION_KEY: evaluation.model_dump(mode="json")}
                cursor.execute(sql["update_evaluation"].sql, (json.dumps(merged), session_id))
            return merged
        with self._transaction() as conn:
            current = conn.execute(_tables()._SELECT_EVALUATION, {"b_session": session_id}).scalar_one_or_none()
            if current is None:
                raise KeyError(f"no diagnosis_session {session_id!r}")
            merged = {**current, EVALUATION_KEY: evaluation.model_dump(mode="json")}
            conn.execute(_tables()._UPDATE_EVALUATION, {"b_session": session_id, "self_evaluation": merged})
        return merged

    def _stored_evaluation(self, session_id: str) -> Any:
        """The session's `self_evaluation` as stored (None when there is no such session)."""
        if self.private:
            with self._driver() as cursor:
                found = cursor.execute(_sqlite_statements()["select_evaluation"].sql, (session_id,)).fetchone()
            return None if found is None else _json_value(found[0])
        with self._transaction() as conn:
            return conn.execute(_tables()._SELECT_EVALUATION, {"b_session": session_id}).scalar_one_or_none()

    def clear(self) -> None:
        """Delete every row: the store is then as fresh as a new one (a runner worker empties its private store
        before each case it loads)."""
        if self.private:
            sql = _sqlite_statements()
            with self._driver() as cursor:
                cursor.execute(sql["delete_invocations"].sql)
                cursor.execute(sql["delete_sessions"].sql)
            return
        with self._transaction() as conn:
            conn.execute(_tables()._DELETE_INVOCATIONS)
            conn.execute(_tables()._DELETE_SESSIONS)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._engine is not None:
            self._engine.dispose()
        if self._driver_conn is not None:
            self._driver_conn.close()
            self._driver_conn = None


def _driver_row(statement: _Compiled, values: dict[str, Any]) -> tuple[Any, ...]:
    """A row's values in the statement's order, JSON columns encoded as SQLAlchemy's JSON type stores them."""
    return tuple(json.dumps(values[key]) if key in _JSON_COLUMNS else values[key] for key in statement.keys)


def _json_value(text: str | None) -> Any:
    """A JSON column read back as SQLAlchemy's JSON type reads it."""
    return None if text is None else json.loads(text)
