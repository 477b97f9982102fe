"""The entry store under the reply cache and the replay: committed in the background, readable at once,
shared by processes, and a store that cannot be written never stops the writer."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.llm.entries import WRITER, BackgroundWriter, EntryFile, flush_writes


def test_the_last_write_of_a_key_wins_and_every_key_is_kept(tmp_path: Path) -> None:
    store = EntryFile(tmp_path / "deep" / "folder" / "e.sqlite3")  # folders made on first write
    for i in range(600):  # more than one batch
        store.put(f"k{i % 200}", f"v{i}")
    flush_writes()
    fresh = EntryFile(store.path)  # another reader: only what is committed
    assert [fresh.get(f"k{i}") for i in (0, 1, 199)] == ["v400", "v401", "v599"]
    assert fresh.get("absent") is None


def test_reading_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    store = EntryFile(tmp_path / "none" / "e.sqlite3")
    assert store.get("k") is None and not (tmp_path / "none").exists()


def test_a_failure_is_its_own_stores_said_once_and_the_writer_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = BackgroundWriter()
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    bad, good = EntryFile(blocked / "e.sqlite3", "bad store", "nothing kept"), EntryFile(tmp_path / "ok.sqlite3")
    writer.submit(bad, "k", "never")
    writer.submit(good, "k", "kept")
    writer.flush()
    writer.submit(bad, "k2", "never either")  # a second failed batch of the same store
    writer.flush()
    assert bad.write_error is not None and bad.write_error.startswith("FileExistsError") and good.write_error is None
    assert [r.getMessage().startswith("bad store: cannot write") for r in caplog.records] == [True]
    assert writer.pending(bad, "k") is None and writer.pending(good, "k") is None
    assert EntryFile(good.path).get("k") == "kept"
    queued: list[tuple[object, ...]] = []
    monkeypatch.setattr(WRITER, "submit", lambda *args: queued.append(args))
    bad.put("k3", "not queued")  # a failed store queues nothing more
    good.put("k3", "queued")
    assert [(t, k) for t, k, _ in queued] == [(good, "k3")]


def test_processes_writing_one_store_at_once_lose_no_entry(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    script = textwrap.dedent(
        f"""
        import sys
        from harness.llm.entries import EntryFile, flush_writes
        store = EntryFile({str(path)!r})
        for i in range(300):
            store.put(f"{{sys.argv[1]}}-{{i}}", "x" * 2000)
        flush_writes()
        sys.exit(store.write_error)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, name]) for name in ("a", "b", "c")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    store = EntryFile(path)
    assert all(store.get(f"{name}-{i}") == "x" * 2000 for name in "abc" for i in range(300))


def test_a_process_that_exits_without_flushing_still_commits_what_it_queued(tmp_path: Path) -> None:
    path = tmp_path / "exit.sqlite3"
    script = f"from harness.llm.entries import EntryFile\nEntryFile({str(path)!r}).put('k', 'v')\n"
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert EntryFile(path).get("k") == "v"
