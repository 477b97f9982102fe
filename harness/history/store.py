"""Where run records live: a folder of JSON files (the default, no server) or a SQLAlchemy database (a team's).

The folder store writes each record as two files, `runs/<id>.json` (the whole record) and then
`heads/<id>.json` (its head): a run is in the store once its head is. Tags are files `tags/<name>--<stamp>.json`
(the newest names the run). Every file is written to a temporary name beside it and renamed into place, and every
name is unique to its writer, so concurrent writers never lose a run and never overwrite each other, and the folder
can be committed to a git branch as it is (GitHub Actions keeps history that way).

A database store keeps the same records in two SQLAlchemy Core tables (`vbench_history_runs`,
`vbench_history_tags`): SQLite for one machine, PostgreSQL for a team.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from harness.corpus.durable import write_whole
from harness.history.record import HistoryError, RecordHead, RunRecord

M = TypeVar("M", bound=BaseModel)
TAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Tag(BaseModel):
    name: str
    run: str
    """The record id it names."""
    tagged_at: str


class HistoryStore(Protocol):
    """What every store does: keep records and tags, list heads oldest first, load one record."""

    label: str

    def add(self, record: RunRecord) -> None: ...

    def heads(self) -> list[RecordHead]: ...

    def load(self, record_id: str) -> RunRecord: ...

    def add_tag(self, tag: Tag) -> None: ...

    def tags(self) -> list[Tag]: ...


def check_tag_name(name: str) -> str:
    if not TAG_NAME.match(name) or "--" in name:
        raise HistoryError(f"tag {name!r}: letters, digits, '.', '_' and single '-' only (at most 100 characters)")
    return name


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


class FolderStore:
    """The default store: JSON files in a folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.label = str(root)

    def add(self, record: RunRecord) -> None:
        body = self.root / "runs" / f"{record.head.id}.json"
        if body.exists():
            raise HistoryError(f"{body}: a record with this id is already stored")
        try:
            write_whole(body, record.model_dump_json())
            write_whole(self.root / "heads" / f"{record.head.id}.json", record.head.model_dump_json())
        except OSError as exc:
            raise HistoryError(f"{self.root}: cannot write the record: {exc.strerror or exc}") from None

    def heads(self) -> list[RecordHead]:
        folder = self.root / "heads"
        if not folder.is_dir():
            return []
        out = [self._read(p, RecordHead) for p in folder.glob("*.json")]
        return sorted(out, key=lambda h: (h.recorded_at, h.id))

    def load(self, record_id: str) -> RunRecord:
        path = self.root / "runs" / f"{record_id}.json"
        if not path.is_file():
            raise HistoryError(f"{self.label}: no recorded run {record_id!r}")
        return self._read(path, RunRecord)

    def add_tag(self, tag: Tag) -> None:
        try:
            write_whole(self.root / "tags" / f"{tag.name}--{tag.tagged_at}.json", tag.model_dump_json())
        except OSError as exc:
            raise HistoryError(f"{self.root}: cannot write the tag: {exc.strerror or exc}") from None

    def tags(self) -> list[Tag]:
        folder = self.root / "tags"
        found = [self._read(p, Tag) for p in folder.glob("*.json")] if folder.is_dir() else []
        return sorted(found, key=lambda t: t.tagged_at)

    @staticmethod
    def _read(path: Path, model: type[M]) -> M:
        try:
            return model.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise HistoryError(f"{path}: cannot be read: {exc.strerror}") from None
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(the file)"
            raise HistoryError(f"{path}: {where}: {err['msg']}") from None


class SqlStore:
    """Records in a database through SQLAlchemy Core (created on first use)."""

    def __init__(self, url: str) -> None:
        import sqlalchemy as sa

        from harness.system.store import StoreURLError, public_store_url, store_url

        try:
            self.url = store_url(url)
            self.engine = sa.create_engine(self.url, future=True)
        except (StoreURLError, sa.exc.ArgumentError, ImportError) as exc:
            shown = public_store_url(url)  # never the password
            raise HistoryError(f"history store {shown}: {str(exc).replace(url, shown)}") from None
        self.label = self.engine.url.render_as_string(hide_password=True)
        meta = sa.MetaData()
        self.runs = sa.Table(
            "vbench_history_runs", meta,
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("recorded_at", sa.String(32), nullable=False, index=True),
            sa.Column("branch", sa.String(255), index=True),
            sa.Column("head", sa.Text, nullable=False),
            sa.Column("body", sa.Text, nullable=False),
        )  # fmt: skip
        self.tag_table = sa.Table(
            "vbench_history_tags", meta,
            sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("name", sa.String(100), nullable=False, index=True),
            sa.Column("run", sa.String(64), nullable=False),
            sa.Column("tagged_at", sa.String(32), nullable=False),
        )  # fmt: skip
        try:
            meta.create_all(self.engine)
        except sa.exc.SQLAlchemyError as exc:
            raise HistoryError(f"history store {self.label}: {_first_line(exc)}") from None

    def add(self, record: RunRecord) -> None:
        import sqlalchemy as sa

        row = {
            "id": record.head.id, "recorded_at": record.head.recorded_at, "branch": record.head.branch,
            "head": record.head.model_dump_json(), "body": record.model_dump_json(),
        }  # fmt: skip
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(self.runs).values(row))
        except sa.exc.SQLAlchemyError as exc:
            raise HistoryError(f"history store {self.label}: {_first_line(exc)}") from None

    def heads(self) -> list[RecordHead]:
        import sqlalchemy as sa

        query = sa.select(self.runs.c.head).order_by(self.runs.c.recorded_at, self.runs.c.id)
        rows = self._select(query)
        return [RecordHead.model_validate_json(r[0]) for r in rows]

    def load(self, record_id: str) -> RunRecord:
        import sqlalchemy as sa

        rows = self._select(sa.select(self.runs.c.body).where(self.runs.c.id == record_id))
        if not rows:
            raise HistoryError(f"{self.label}: no recorded run {record_id!r}")
        return RunRecord.model_validate_json(rows[0][0])

    def add_tag(self, tag: Tag) -> None:
        import sqlalchemy as sa

        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(self.tag_table).values(name=tag.name, run=tag.run, tagged_at=tag.tagged_at))
        except sa.exc.SQLAlchemyError as exc:
            raise HistoryError(f"history store {self.label}: {_first_line(exc)}") from None

    def tags(self) -> list[Tag]:
        import sqlalchemy as sa

        t = self.tag_table
        rows = self._select(sa.select(t.c.name, t.c.run, t.c.tagged_at).order_by(t.c.tagged_at, t.c.seq))
        return [Tag(name=r[0], run=r[1], tagged_at=r[2]) for r in rows]

    def _select(self, query: object) -> list[tuple[str, ...]]:
        import sqlalchemy as sa

        try:
            with self.engine.connect() as conn:
                return [tuple(str(v) for v in r) for r in conn.execute(query)]  # type: ignore[call-overload]
        except sa.exc.SQLAlchemyError as exc:
            raise HistoryError(f"history store {self.label}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def is_url(spec: str) -> bool:
    return "://" in spec


def shown_store(spec: str) -> str:
    """The store as messages may name it: a URL without its password."""
    from harness.system.store import public_store_url

    return public_store_url(spec) if is_url(spec) else spec


def open_store(spec: str | Path) -> HistoryStore:
    """The store a `--history` value names: a SQLAlchemy URL (`sqlite:///f.db`, `postgresql://...`) or a folder."""
    text = str(spec)
    if not text.strip():
        raise HistoryError("--history: an empty store name")
    return SqlStore(text) if is_url(text) else FolderStore(Path(text))
