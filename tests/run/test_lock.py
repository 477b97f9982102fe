"""The one-writer lock of a run folder: held per process, refused to another, kept for a command, never held by
the dead; a forked child of a dead parent writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.run import lock
from harness.run.folder import LOCK_FILE, OrphanedWriter, remove_stale_temps, write_text


def other_process_takes(folder: Path) -> int:
    """Another process tries the lock: 0 when it got it, 1 when refused."""
    code = (
        "import sys; from pathlib import Path; from harness.run.lock import acquire, RunLocked\n"
        f"try:\n    acquire(Path({str(folder)!r}))\nexcept RunLocked:\n    sys.exit(1)\n"
    )
    return subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode


def test_holding_refuses_another_process_and_releases_after_the_block(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with lock.holding(folder):
        assert (folder / LOCK_FILE).read_text().strip() == str(os.getpid())
        assert other_process_takes(folder) == 1
        with lock.holding(folder):  # the same process again: already its own
            pass
        assert other_process_takes(folder) == 1
    assert other_process_takes(folder) == 0


def test_a_command_session_keeps_its_folders_until_it_ends(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with lock.command_session() as folders:
        with lock.holding(folder):
            pass
        assert folders == [folder] and other_process_takes(folder) == 1  # scoring after the run is still its own
    assert other_process_takes(folder) == 0


def test_the_message_names_the_folder_and_the_holder(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from harness.run.lock import acquire; from pathlib import Path; "
         f"acquire(Path({str(folder)!r})); print('held', flush=True); import time; time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(
            lock.RunLocked, match=f"{folder} is being written by another vbench process \\(pid {holder.pid}\\)"
        ):
            lock.acquire(folder)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    with lock.holding(folder):  # a dead process holds nothing
        pass


def test_only_the_temp_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = tmp_path / f".summary.json.{int(dead.stdout)}.tmp"
    live = tmp_path / f".report.html.{os.getpid()}.tmp"
    dropping = tmp_path / "results.jsonl.tmp"
    kept = tmp_path / "notes.tmp"
    for path in (gone, live, dropping, kept):
        path.write_text("x")
    assert sorted(remove_stale_temps(tmp_path)) == sorted([gone, dropping])
    assert live.exists() and kept.exists()


def test_a_forked_child_writes_nothing_once_its_parent_died(tmp_path: Path) -> None:
    """The parent forks a child and is killed; the child then tries to write a run file."""
    marker = tmp_path / "child.out"
    code = f"""
import os, signal, time
from pathlib import Path
from harness.run.folder import OrphanedWriter, write_text
pid = os.fork()
if pid == 0:
    if os.fork() == 0:  # the grandchild: its parent (the child) is killed below
        time.sleep(1.5)
        try:
            write_text(Path({str(tmp_path)!r}), "summary.json", "{{}}")
            outcome = "written"
        except OrphanedWriter:
            outcome = "refused"
        Path({str(marker)!r}).write_text(outcome)
        os._exit(0)
    time.sleep(60)
else:
    time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.1)
    assert marker.read_text() == "refused" and not (tmp_path / "summary.json").exists()
    write_text(tmp_path, "summary.json", "{}")  # a process whose parent lives writes as always
    assert not lock.orphaned()
    assert OrphanedWriter.__mro__[1] is RuntimeError
