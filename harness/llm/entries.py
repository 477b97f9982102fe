"""Text entries by key in one SQLite file, written in the background: the store under the reply cache and the
result replay.

One file per store instead of one file per entry: creating a file is several system calls, and a run kept two a case (a reply and a result): together
they were a large share of the harness's CPU per request, and held up the event loop while the other requests
waited on it. An insert into SQLite costs a small fraction of that.

- Writes go to one daemon thread (`WRITER`), which commits whatever is queued in one transaction per file; the
  event loop never waits on the disk. A write not yet committed is read from the writer's pending map, so a
  process always reads its own writes. `flush_writes` waits for the disk (the run calls it at its end, a Ray
  worker after each batch, and the interpreter at exit).
- Files are in WAL mode with a busy timeout, so several processes (shards, Ray workers on one machine) can share
  a store. SQLite's locks need a local file system; on one that cannot give WAL mode the file stays in rollback
  mode.
- A store that cannot be written (read-only, full, not a database) is reported once, as a warning naming its
  owner, and kept in `write_error`; nothing more is queued for it. An unreadable store or entry is a miss.
  Neither ever stops a run.
"""

from __future__ import annotations

import atexit
import logging
import queue
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_BATCH = 512
_SCHEMA = "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID"


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


class EntryFile:
    """One SQLite file of (key, text) entries. `get` from any thread; `put` queues the write on `WRITER`.

    `owner` and `lost` word the one warning a store that cannot be written gives ("response cache: cannot write
    ...; replies are not cached").
    """

    def __init__(self, path: str | Path, owner: str = "entry store", lost: str = "entries are not kept") -> None:
        self.path = Path(path)
        self.owner, self.lost = owner, lost
        self.write_error: str | None = None
        self._readers = threading.local()
        self._writer: sqlite3.Connection | None = None

    def get(self, key: str) -> str | None:
        """The entry's text (queued or committed), or None: absent, or the file cannot be read."""
        text = WRITER.pending(self, key)
        if text is not None:
            return text
        try:
            conn = self._reader()
            if conn is None:
                return None
            row = conn.execute("SELECT text FROM entries WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else str(row[0])

    def put(self, key: str, text: str) -> None:
        """Queue the entry (nothing, once the store has failed to be written)."""
        if self.write_error is None:
            WRITER.submit(self, key, text)

    def failed(self, exc: Exception) -> None:
        """On the writer's thread: a batch could not be written. Said once; the run goes on without the store."""
        if self.write_error is None:
            self.write_error = f"{type(exc).__name__}: {exc}"
            log.warning("%s: cannot write %s (%s); %s", self.owner, self.path, exc, self.lost)

    def _reader(self) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._readers, "conn", None)
        if conn is None:
            if not self.path.exists():  # reading never creates the file
                return None
            conn = self._readers.conn = _connect(self.path)
        return conn

    def write_many(self, rows: list[tuple[str, str]]) -> None:
        """On the writer's thread: the rows in one transaction (the file and its folder made on first use)."""
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = _connect(self.path)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._writer = conn
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO entries (key, text) VALUES (?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


class BackgroundWriter:
    """Entries committed on one daemon thread, in submission order, batched per file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[Path, str], str] = {}
        self._queue: queue.Queue[tuple[EntryFile, str, str]] = queue.Queue()
        self._thread: threading.Thread | None = None

    def submit(self, target: EntryFile, key: str, text: str) -> None:
        with self._lock:
            self._pending[(target.path, key)] = text
            if self._thread is None or not self._thread.is_alive():  # first use, or a forked child
                self._thread = threading.Thread(target=self._work, name="vbench-entry-writer", daemon=True)
                self._thread.start()
        self._queue.put((target, key, text))

    def pending(self, target: EntryFile, key: str) -> str | None:
        """The text queued for `key` of `target`'s file (by any `EntryFile` of that path) and not yet committed."""
        with self._lock:
            return self._pending.get((target.path, key))

    def flush(self) -> None:
        """Wait until every submitted entry is committed (or has failed)."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.join()

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            by_file: dict[int, list[tuple[EntryFile, str, str]]] = {}
            for item in batch:
                by_file.setdefault(id(item[0]), []).append(item)
            for items in by_file.values():
                self._commit(items)
            with self._lock:
                for target, key, text in batch:
                    if self._pending.get((target.path, key)) is text:
                        del self._pending[(target.path, key)]
            for _ in batch:
                self._queue.task_done()

    @staticmethod
    def _commit(items: list[tuple[EntryFile, str, str]]) -> None:
        target = items[0][0]
        latest = {key: text for _, key, text in items}  # the last write of a key wins, as on disk
        try:
            target.write_many(list(latest.items()))
        except (OSError, sqlite3.Error) as exc:
            target.failed(exc)
        except Exception:  # a writer that died would leave flush() waiting forever
            log.exception("entry writer: unexpected error writing %s", target.path)


WRITER = BackgroundWriter()
"""The process's one entry writer (the reply cache and the result replay share it)."""
atexit.register(WRITER.flush)


def flush_writes() -> None:
    """Wait until every entry this process wrote is committed."""
    WRITER.flush()
