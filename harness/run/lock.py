"""One writer per run folder: an exclusive `flock` on a lock file inside it, held while a command writes there.

A second `vbench run`, `--resume`, `vbench merge` or `vbench report --rescore` on a folder another process is
writing is refused (`RunLocked`, exit 2) before it sends or writes anything, so no case is sent and paid twice.
The kernel drops the lock when its holder dies, however it dies (kill -9 included): a dead process never holds a
folder. Taking the lock removes the temporary files a dead writer left (`folder.remove_stale_temps`).

A command holds its folders until it ends (`command_session`, which `harness.cli.main` opens); outside a session
(a library caller), `holding` releases the lock at the end of its block. A forked child shares its parent's lock;
it writes nothing once that parent has died (`orphaned`): no report is written on behalf of a run that is gone.
This module is imported with `harness.run.folder` (and by `harness.cli.main`), before anything forks.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness import UsageError


class RunLocked(UsageError):
    """Another live process is writing the run folder (exit 2, nothing sent)."""


@dataclass
class _Held:
    fd: int
    owner: int
    """The pid that took the lock (a forked child inherits the entry with its parent's pid)."""


@dataclass
class _Session:
    depth: int = 0
    folders: list[Path] = field(default_factory=list)
    """Every folder locked during the session, in order (kept after release: what a command wrote to)."""


_held: dict[Path, _Held] = {}
_session = _Session()


def acquire(run_dir: Path) -> bool:
    """Lock `run_dir` (made if missing) for this process; True when newly taken, False when already held here.
    `RunLocked` when another process holds it."""
    key = run_dir.resolve()
    known = _held.get(key)
    if known is not None and known.owner == os.getpid():
        return False
    from harness.run.folder import LOCK_FILE, remove_stale_temps  # only when a folder is locked: start-up stays light

    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):  # a folder this process cannot write: only read
            return False
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunLocked(
            f"{run_dir} is being written by another vbench process (pid {holder}): wait for it to end, or choose "
            "another --out; nothing was sent"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = _Held(fd, os.getpid())
    if _session.depth:
        _session.folders.append(run_dir)
    remove_stale_temps(run_dir)
    return True


def release(run_dir: Path) -> None:
    """Give up this process's lock on `run_dir` (nothing when it holds none)."""
    held = _held.pop(run_dir.resolve(), None)
    if held is not None:
        with contextlib.suppress(OSError):
            os.close(held.fd)  # closing the last descriptor drops the flock


@contextlib.contextmanager
def holding(run_dir: Path) -> Iterator[None]:
    """`run_dir` locked for the block; released after unless a command session keeps it until the command ends."""
    taken = acquire(run_dir)
    try:
        yield
    finally:
        if taken and not _session.depth:
            release(run_dir)


@contextlib.contextmanager
def command_session() -> Iterator[list[Path]]:
    """One command: every folder it locks stays locked until the command ends (scoring and the report after the
    run included); yields the list of those folders (for the resume hint of a command that stopped)."""
    _session.depth += 1
    folders = _session.folders
    try:
        yield folders
    finally:
        _session.depth -= 1
        if not _session.depth:
            for run_dir in folders:
                release(run_dir)
            _session.folders = []


_forked_from: int | None = None
"""In a forked child, the pid of the process that forked it (None in a process that was not forked)."""


def _note_parent() -> None:
    global _forked_from
    _forked_from = os.getppid()  # still alive at this moment: it is the one forking


os.register_at_fork(after_in_child=_note_parent)


def orphaned() -> bool:
    """True in a forked child whose parent has died: what it would write was the dead parent's work."""
    return _forked_from is not None and os.getppid() != _forked_from
