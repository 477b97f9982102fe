"""Running tasks: `concurrency` workers on one queue, each case's work split around its verifier call.

A worker does a case's first half (load the store, parse, gatekeep, render, send) and awaits the reply; the
second half (policy, persist, result record, log line) is handed to a task of its own and runs while the
worker's next request is in flight. At a steady model latency the replies of all workers come back together
and one event loop serves them in turn: each worker's next request waits for the CPU of every worker ahead of
it, so moving the second half off that path shortens every round (issue 7, `nox -s bench`). A worker keeps two
stores and alternates them, so a case is persisted in its own store while the next one loads into the other;
a store is reused only once the case before has finished with it.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.corpus.schema import Case
from harness.run.execute import start_case
from harness.run.log import ResultRecord, ResultWriter, VariantInfo
from harness.run.records import record_from_crash, record_from_run
from harness.run.replay import ResultReplay, replayable
from harness.system.models import VerifierCall
from harness.system.pipeline import Started, finish_pipeline
from harness.system.policy import PolicySettings
from harness.system.store import Store
from harness.system.verifiers.base import Verifier

POLICY_VARIANT = "policy"


class Progress(Protocol):
    def start(self, total: int, done: int) -> None: ...
    def advance(self, record: ResultRecord) -> None: ...
    def stop(self) -> None: ...


class SilentProgress:
    def start(self, total: int, done: int) -> None: ...
    def advance(self, record: ResultRecord) -> None: ...
    def stop(self) -> None: ...


@dataclass(frozen=True)
class Task:
    case: Case
    variant: VariantInfo | None  # None: a policy case with its scripted reply
    epoch: int
    case_hash: str = ""  # the case's content hash, computed once per case (hashing a case is not free)

    @property
    def variant_name(self) -> str:
        return self.variant.name if self.variant else POLICY_VARIANT

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.case.id, self.case_hash or self.case.content_hash(), self.variant_name, self.epoch)


ReplayKey = Callable[[Task], str | None]
VerifierFor = Callable[[Task], Verifier]


@dataclass(frozen=True)
class Called:
    """A case up to its verifier's reply: the first half's output, waiting for its second half."""

    started: Started
    call: VerifierCall
    settings: PolicySettings


def _crash(task: Task, exc: Exception) -> ResultRecord:
    """An unexpected exception becomes an error record, never a lost run."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    error = f"harness_error: {detail[:500]}"
    return record_from_crash(task.case, task.variant_name, task.epoch, error, task.case_hash or None)


async def call_one(task: Task, verifier_for: VerifierFor, excerpt_chars: int, store: Store) -> Called | ResultRecord:
    """The first half of a task, up to and including the verifier call (or the record of its crash)."""
    try:
        verifier = verifier_for(task)
        settings = PolicySettings(claim_guard=task.variant.claim_guard if task.variant else True)
        started = start_case(task.case, store, excerpt_chars)
        call = await verifier.verify(started.prepared.inputs)
        return Called(started=started, call=call, settings=settings)
    except Exception as exc:
        return _crash(task, exc)


def finish_one(task: Task, called: Called, store: Store) -> ResultRecord:
    """The second half: policy, persistence, the result record (or the record of its crash)."""
    try:
        run = finish_pipeline(store, called.started, called.call, called.settings)
        return record_from_run(task.case, task.variant_name, task.epoch, run, task.case_hash or None)
    except Exception as exc:
        return _crash(task, exc)


async def run_one(
    task: Task, verifier_for: VerifierFor, excerpt_chars: int, store: Store | None = None
) -> ResultRecord:
    """One task, both halves in order, against `store` (or a fresh one)."""
    own = store or Store()
    try:
        called = await call_one(task, verifier_for, excerpt_chars, own)
        return called if isinstance(called, ResultRecord) else finish_one(task, called, own)
    finally:
        if store is None:
            own.close()


@dataclass
class _Lane:
    """One of a worker's two stores, and the second half still running on it."""

    store: Store
    finishing: asyncio.Task[None] | None = None

    async def free(self) -> Store:
        """The store, once the case before has finished with it."""
        if self.finishing is not None:
            await self.finishing
            self.finishing = None
        return self.store


async def run_tasks(
    tasks: list[Task],
    verifier_for: VerifierFor,
    writer: ResultWriter,
    concurrency: int,
    excerpt_chars: int,
    progress: Progress,
    replay: ResultReplay | None = None,
    replay_key: ReplayKey | None = None,
) -> list[ResultRecord]:
    """Run every task with at most `concurrency` verifier calls in flight; write each record as it finishes.

    With `replay`, a task whose `replay_key` names a kept result is answered from it, and every replayable
    new result is kept under its key.
    """
    queue: asyncio.Queue[Task] = asyncio.Queue()
    for task in tasks:
        queue.put_nowait(task)
    finished: list[ResultRecord] = []

    def emit(record: ResultRecord, key: str | None) -> None:
        line = record.model_dump_json()
        if replay is not None and key is not None and not record.replayed and replayable(record):
            replay.put(key, line)
        writer.write_line(line)
        finished.append(record)
        progress.advance(record)

    async def finish(task: Task, called: Called, store: Store, key: str | None) -> None:
        emit(finish_one(task, called, store), key)

    async def worker() -> None:
        lanes = (_Lane(Store()), _Lane(Store()))
        turn = 0
        try:
            while True:
                try:
                    task = queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                key = replay_key(task) if replay is not None and replay_key is not None else None
                kept = replay.get(key, task.case.id, task.variant_name, task.epoch) if replay and key else None
                if kept is not None:
                    emit(kept, key)
                    continue
                lane = lanes[turn % 2]
                turn += 1
                called = await call_one(task, verifier_for, excerpt_chars, await lane.free())
                if isinstance(called, ResultRecord):
                    emit(called, key)
                else:
                    lane.finishing = asyncio.create_task(finish(task, called, lane.store, key))
            for lane in lanes:
                await lane.free()
        finally:
            for lane in lanes:
                if lane.finishing is not None and not lane.finishing.done():
                    lane.finishing.cancel()  # the worker failed (the log could not be written): stop with it
                lane.store.close()

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(tasks))))]
    await asyncio.gather(*workers)
    return finished
