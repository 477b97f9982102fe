"""A call run in a forked child: its value comes back, its failure is named, and a cancelled child is reaped."""

from __future__ import annotations

import os
import time

import pytest

from harness.corpus.forks import Forked, ForkFailed


def _pid_and(value: object) -> tuple[int, object]:
    return os.getpid(), value


def _fails() -> None:
    raise ValueError("no such unit")


def _unpicklable() -> object:
    return lambda: None


def _sleeps() -> None:
    time.sleep(600)


def test_the_child_returns_its_value_from_another_process() -> None:
    pid, value = Forked(_pid_and, {"k": [1, 2.5, "é"]}).result()
    assert pid != os.getpid() and value == {"k": [1, 2.5, "é"]}


@pytest.mark.parametrize(("fn", "why"), [(_fails, "ValueError: no such unit"), (_unpicklable, "pickle")])
def test_a_child_that_fails_or_returns_what_cannot_come_back_is_a_fork_failure(fn: object, why: str) -> None:
    child = Forked(fn)  # type: ignore[arg-type]
    with pytest.raises(ForkFailed, match=why):
        child.result()
    with pytest.raises(ForkFailed):  # asked again, the same answer
        child.result()


def test_a_cancelled_child_is_killed_and_reaped() -> None:
    child = Forked(_sleeps)
    pid = child._pid
    child.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no such child of this process
    with pytest.raises(ForkFailed, match="cancelled"):
        child.result()


def test_a_caller_that_does_the_work_itself_gets_none_from_a_failed_child() -> None:
    assert Forked(_fails).result_or_none() is None
    got = Forked(_pid_and, 0).result_or_none()
    assert got is not None and got[0] != os.getpid() and got[1] == 0
