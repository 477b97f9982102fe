"""History stores: a folder of JSON files and SQLAlchemy databases (real SQLite, real PostgreSQL) keep every record
and tag, concurrent writers lose nothing, and a broken file is named with its key path."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from harness.history.record import HistoryError, RecordHead, RunRecord, VariantHead
from harness.history.store import FolderStore, Tag, check_tag_name, open_store


def record(n: int, branch: str = "main") -> RunRecord:
    head = RecordHead(
        id=f"20261207T000000.{n:06d}Z-{n:08x}", run_id=f"run-{n}", recorded_at=f"20261207T000000.{n:06d}Z",
        branch=branch, commit=f"{n:040x}", corpus_hash="c0",
        variants=[VariantHead(name="m@p", model="m", units=2, verdict_correct=1)],
    )  # fmt: skip
    return RunRecord(head=head, manifest={}, units={"variant": ["m@p", "m@p"], "case_id": ["a", "b"]})


def _write_many(root: str, start: int, count: int) -> None:
    store = open_store(root)
    for n in range(start, start + count):
        store.add(record(n))


def test_folder_store_keeps_records_and_tags(tmp_path: Path) -> None:
    store = open_store(tmp_path / "h")
    assert isinstance(store, FolderStore) and store.heads() == []
    for n in (2, 1, 3):
        store.add(record(n))
    assert [h.run_id for h in store.heads()] == ["run-1", "run-2", "run-3"]  # oldest first, whatever the order
    assert store.load(record(2).head.id) == record(2)
    store.add_tag(Tag(name="v1", run=record(1).head.id, tagged_at="1"))
    store.add_tag(Tag(name="v1", run=record(3).head.id, tagged_at="2"))
    assert [t.run for t in store.tags()] == [record(1).head.id, record(3).head.id]
    with pytest.raises(HistoryError, match="already stored"):
        store.add(record(2))
    with pytest.raises(HistoryError, match="no recorded run"):
        store.load("nope")


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "h")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(root, 100 * i, 10)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert len(open_store(root).heads()) == 40
    assert not list((tmp_path / "h").rglob("*.tmp"))  # no temporary file left behind


def test_a_broken_head_is_named_with_its_key_path(tmp_path: Path) -> None:
    store = open_store(tmp_path / "h")
    store.add(record(1))
    head = next((tmp_path / "h" / "heads").glob("*.json"))
    head.write_text(head.read_text().replace('"passed":false', '"passed":"maybe"'))
    with pytest.raises(HistoryError) as err:
        store.heads()
    assert str(head) in str(err.value) and "passed" in str(err.value)


def test_a_store_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(HistoryError, match="cannot write the record"):
        open_store(blocker).add(record(1))


def test_tag_names_are_checked() -> None:
    assert check_tag_name("v1.2_rc-1") == "v1.2_rc-1"
    for bad in ("", "-x", "a--b", "a/b", "<script>"):
        with pytest.raises(HistoryError):
            check_tag_name(bad)


def _roundtrip(url: str) -> None:
    store = open_store(url)
    for n in (2, 1):
        store.add(record(n, branch="feature/x" if n == 2 else "main"))
    assert [h.run_id for h in store.heads()] == ["run-1", "run-2"]
    assert store.load(record(2).head.id) == record(2, branch="feature/x")
    store.add_tag(Tag(name="v1", run=record(1).head.id, tagged_at="1"))
    assert [t.name for t in store.tags()] == ["v1"]
    with pytest.raises(HistoryError):
        store.add(record(1))  # the same id twice: refused by the primary key
    again = open_store(url)  # tables exist: opened again, nothing lost
    assert len(again.heads()) == 2


def test_sqlite_store(tmp_path: Path) -> None:
    _roundtrip(f"sqlite:///{tmp_path / 'h.db'}")


def test_postgresql_store(postgres_url: str) -> None:
    _roundtrip(postgres_url)


def test_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="history store") as err:
        open_store("postgresql://nobody@127.0.0.1:1/none")
    assert "\n" not in str(err.value)
