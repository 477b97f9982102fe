"""Running tasks: `concurrency` workers on one queue, each with its own store, each finishing a case before the next.

Handing a case's second half (policy, persist, result record) to a task of its own, so that it ran while the
worker's next request was in flight, was measured (`nox -s bench`, 1,000 cases, c=32): at 200 ms it gained 1%
(within noise) and it cost 0.15-0.3 ms more CPU per case, so it is not done.
"""

from __future__ import annotations

import asyncio
import hashlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.corpus.perturb import Perturbed
from harness.corpus.schema import STORE_NAMESPACE_LENGTH, Case
from harness.run.caseref import CaseRef
from harness.run.execute import execute_case, scripted_verifier_for
from harness.run.log import POLICY_VARIANT, STORE_UNAVAILABLE, ResultRecord, VariantInfo
from harness.run.records import perturbation_fields, record_from_crash, record_from_run
from harness.run.replay import ResultReplay, replayable
from harness.system.policy import PolicySettings
from harness.system.store import MEMORY_URL, Store, StoreUnavailable
from harness.system.verifiers.base import Verifier


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
    case: CaseRef
    """The case in compact form (with its content hash): the unit validates its own `Case` when it runs."""
    variant: VariantInfo | None  # None: a policy case with its scripted reply
    epoch: int
    perturbed: Perturbed | None = None
    """Set for a robustness unit: `case` is then the perturbed case, under its own hash."""

    @property
    def variant_name(self) -> str:
        return self.variant.name if self.variant else POLICY_VARIANT

    @property
    def content_hash(self) -> str:
        return self.case.hash

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.case.id, self.case.hash, self.variant_name, self.epoch)


ReplayKey = Callable[[Task], str | None]
VerifierFor = Callable[[Task], Verifier]
"""A variant task's verifier (a policy task replays its case's scripted reply: `run_one` makes that one)."""


def store_namespace(seed: str, task: Task) -> str:
    """The case's own prefix in the store: the same for every try of this task in this run (a resumed run
    replaces its own rows), another one in any other run, variant, epoch, case or perturbation of it (a
    perturbed case has its own content hash)."""
    digest = hashlib.sha256("\0".join([seed, *map(str, task.key)]).encode()).hexdigest()
    namespace = f"vb{digest[:12]}."  # STORE_NAMESPACE_LENGTH characters: the case contract leaves room for it
    assert len(namespace) == STORE_NAMESPACE_LENGTH
    return namespace


async def run_one(
    task: Task,
    verifier_for: VerifierFor,
    excerpt_chars: int,
    store: Store | None = None,
    case_timeout: float | None = None,
    namespace: str = "",
    case: Case | None = None,
) -> ResultRecord:
    """One task against `store` (or a fresh one); an unexpected exception becomes an error record, never a lost run.

    With `case_timeout`, a case still running after that many seconds (all its attempts and waits included) is
    cancelled and recorded as a `case_timeout` error. `case`: the task's case when the caller loaded it already.
    """
    deadline = asyncio.timeout(case_timeout)
    if case is None:
        case = task.case.load()  # the validated case's own JSON: it validates again (a bad ref is a harness bug)
    try:
        # a policy unit's scripted verifier is made from the case just loaded, not from a second validation of it
        verifier = scripted_verifier_for(case) if task.variant is None else verifier_for(task)
        settings = task.variant.policy if task.variant else PolicySettings()
        async with deadline:
            run = await execute_case(case, verifier, settings, excerpt_chars, store, namespace)
        record = record_from_run(
            case, task.variant_name, task.epoch, run, task.case.hash, task.perturbed, excerpt_chars
        )
        kept = store is not None and not store.private  # a private in-memory store's rows go with the next case
        record.store_namespace = (namespace or None) if kept else None
        return record
    except Exception as exc:
        if isinstance(exc, TimeoutError) and deadline.expired():
            error = f"case_timeout: no result within the case timeout of {case_timeout:g} s"
            return record_from_crash(case, task.variant_name, task.epoch, error, task.case.hash, task.perturbed)
        if isinstance(exc, StoreUnavailable):
            error = f"{STORE_UNAVAILABLE}: {str(exc)[:500]}"
            return record_from_crash(case, task.variant_name, task.epoch, error, task.case.hash, task.perturbed)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        error = f"harness_error: {detail[:500]}"
        return record_from_crash(case, task.variant_name, task.epoch, error, task.case.hash, task.perturbed)


async def run_tasks(
    tasks: list[Task],
    verifier_for: VerifierFor,
    writer: LineWriter,
    concurrency: int,
    excerpt_chars: int,
    progress: Progress,
    replay: ResultReplay | None = None,
    replay_key: ReplayKey | None = None,
    case_timeout: float | None = None,
    store_url: str = MEMORY_URL,
    namespace_seed: str = "",
    watch: Watch | None = None,
) -> int:
    """Run every task with at most `concurrency` in flight; write each record as it finishes; return how many.

    With `replay`, a task whose `replay_key` names a kept result is answered from it, and every replayable
    new result is kept under its key. `watch` sees each record once it is written; what it raises (the
    breaker's `EndpointDown`) cancels the other workers and ends the run, every written record kept.
    """
    queue: asyncio.Queue[Task] = asyncio.Queue()
    for task in tasks:
        queue.put_nowait(task)
    out = Emitter(writer, progress, replay, replay_key, watch)
    emit, key_of = out.emit, out.key_of

    async def worker() -> None:
        store = Store(store_url)  # one per worker (its own connection); each case writes under its own namespace
        try:
            while True:
                try:
                    task = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                key = key_of(task)
                kept = out.replayed(task, key)
                if kept is not None:
                    emit(kept, key)
                    continue
                namespace = store_namespace(namespace_seed, task)
                case = task.case.load()  # handed to the watch with the record, so a scorer need not load it again
                record = await run_one(task, verifier_for, excerpt_chars, store, case_timeout, namespace, case)
                emit(record, key, case=case)
        finally:
            store.close()

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(tasks))))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for running in workers:
            running.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    return out.finished


Watch = Callable[[ResultRecord, Case | None], None]
"""Sees every record the moment it is written, with the case it ran with when this process holds it (None for a
replayed record or one made on another machine); raising stops the run (the breaker)."""


class LineWriter(Protocol):
    def write_line(self, line: str) -> None: ...


class Emitter:
    """Where finished records go, in the order they finish: the run log first, then progress and the replay
    store. Every executor (this process's workers, Ray tasks) hands its records here, on the driver."""

    def __init__(
        self,
        writer: LineWriter,
        progress: Progress,
        replay: ResultReplay | None = None,
        replay_key: ReplayKey | None = None,
        watch: Watch | None = None,
    ) -> None:
        self.writer, self.progress, self.replay, self.replay_key = writer, progress, replay, replay_key
        self.watch = watch
        self.finished = 0
        """How many records were emitted (counted, not kept: memory stays flat in the size of the run)."""

    def emit(self, record: ResultRecord, key: str | None, line: str | None = None, case: Case | None = None) -> None:
        line = line or record.model_dump_json()
        self.writer.write_line(line)  # the log first: a cache that cannot be written loses no result
        self.finished += 1
        self.progress.advance(record)
        if self.replay is not None and key is not None and not record.replayed and replayable(record):
            self.replay.put(key, line)
        if self.watch is not None:
            self.watch(record, case)

    def key_of(self, task: Task) -> str | None:
        """The task's replay key; a key that cannot be computed (a failing factory) is no key."""
        if self.replay is None or self.replay_key is None:
            return None
        try:
            return self.replay_key(task)
        except Exception:
            return None  # the verifier is built again in run_one, where its failure becomes a record

    def replayed(self, task: Task, key: str | None) -> ResultRecord | None:
        """The kept result that answers `task`, if any."""
        if self.replay is None or key is None:
            return None
        kept = self.replay.get(key, task.case.id, task.variant_name, task.epoch)
        # replayed: this run wrote no rows for it
        return (
            None
            if kept is None
            else kept.model_copy(update={**perturbation_fields(task.perturbed), "store_namespace": None})
        )
