"""Work in forked processes: when forking is safe here, and one call run in a child beside the parent's own work.

CPU work in Python holds one core (the GIL). Where a command has two independent passes over large files (the
report reading results.jsonl while the scorer reads it too), the second can run in a forked child on the other
core: the child inherits the parent's modules and data without pickling them, and only its result is pickled
back. Forking is safe only while this process runs no other thread (a lock another thread held would stay held
in the child), and only on Linux (elsewhere the default start method is not fork).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

R = TypeVar("R")


def may_fork() -> bool:
    """Whether a child forked now is safe: Linux, more than one core, and no other thread in this process."""
    return sys.platform == "linux" and (os.cpu_count() or 1) > 1 and threading.active_count() == 1


class ForkFailed(RuntimeError):
    """The child ended without a result (it raised, was killed, or its result would not pickle)."""


class Forked(Generic[R]):
    """`fn(*args)` running in a forked child; `result()` waits for it and returns what it returned."""

    def __init__(self, fn: Callable[..., R], *args: Any) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running the parent's exit handlers
            os.close(read)
            code = 0
            try:
                try:
                    payload = pickle.dumps((True, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException as exc:
                    payload, code = pickle.dumps((False, f"{type(exc).__name__}: {exc}")), 1
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read
        self._done: tuple[bool, Any] | None = None

    def cancel(self) -> None:
        """Stop the child and reap it (its result is not wanted)."""
        if self._done is None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if self._read >= 0:  # else `result` owned and closed it (it was reading when the stop came)
                os.close(self._read)
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:  # `result` reaped it already
                pass
            self._done = (False, "cancelled")

    def result(self) -> R:
        """The child's return value (waiting for it); `ForkFailed` when it has none."""
        if self._done is None:
            fd, self._read = self._read, -1  # the file object closes it: `cancel` must not close it again
            with os.fdopen(fd, "rb") as inp:
                data = inp.read()
            os.waitpid(self._pid, 0)
            try:
                # our own child's bytes, through a pipe only it and this process hold
                self._done = pickle.loads(data) if data else (False, "the child ended without a result")  # noqa: S301
            except Exception as exc:
                self._done = (False, f"the child's result could not be read: {exc}")
        ok, value = self._done
        if not ok:
            raise ForkFailed(str(value))
        return cast(R, value)

    def result_or_none(self) -> R | None:
        """The child's return value, or None when it has none: for a caller that then does the child's work
        itself (the child only ever saves time, never changes what is computed)."""
        try:
            return self.result()
        except ForkFailed:
            return None
