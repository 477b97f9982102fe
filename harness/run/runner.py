"""The runner: policy cases once, quality cases per variant × epoch, bounded concurrency.

Each result is appended to results.jsonl the moment it finishes; `resume`
skips every (case, content hash, variant, epoch) already there. What the run is (its variants, units,
manifest and resume check) is planned in `harness.run.plan`; this module runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness.corpus.schema import Case
from harness.llm.entries import flush_writes
from harness.run.caseref import CaseRef
from harness.run.endpoints import Breaker
from harness.run.folder import (
    MANIFEST_FILE,
    RESULTS_FILE,
    ResultWriter,
    drop_corrupt_results,
    read_manifest,
    write_cases,
    write_manifest,
)
from harness.run.lock import holding
from harness.run.log import Manifest, ResultRecord, VariantInfo
from harness.run.looks import EarlyStop, split_into_looks, stop_record
from harness.run.plan import (
    ResumeError,
    build_variants,
    check_resumable,
    make_manifest,
    perturb_cases,
    plan_tasks,
    shard_tasks,
)
from harness.run.providers import components, json_safe
from harness.run.replay import ResultReplay, code_fingerprint, task_key, variant_digest
from harness.run.runlog import RunLog
from harness.run.schedule import Progress, SilentProgress, Task, Watch, run_tasks
from harness.run.settings import ExecutorSettings, StopEarlySettings
from harness.run.study import Study, StudyError
from harness.system.store import MEMORY_URL, Store, StoreURLError, public_store_url
from harness.system.verifiers.base import Verifier

VerifierFactory = Callable[[VariantInfo, int], Verifier]
T = TypeVar("T")


@dataclass
class RunResult:
    run_dir: Path
    manifest: Manifest
    finished: int = 0
    """Units this call ran (the records are in the run folder, not held: memory stays flat in the run's size)."""
    skipped: int = 0
    dropped: list[int] = field(default_factory=list)
    """Line numbers of results.jsonl that `drop_corrupt` took out (their cases were redone)."""

    @property
    def records(self) -> list[ResultRecord]:
        """Every unit's latest record in unit-key order, read back from the run folder (`RunLog`: for callers that
        want them in memory)."""
        return list(RunLog.read(self.run_dir).records())


def run_study(
    study: Study,
    cases: Sequence[CaseRef | Case],
    run_dir: Path,
    factory: VerifierFactory,
    progress: Progress | None = None,
    run_id: str | None = None,
    early_stop: EarlyStop | None = None,
    on_record: Watch | None = None,
    on_start: Callable[[], None] | None = None,
) -> RunResult:
    """Run (or resume) a study of `cases` into `run_dir`; the records are in the run folder.

    `on_record` is handed each record as it is written, on the writer's side, with the case it ran with (scoring
    it while the run goes).
    `on_start` is called once, when everything the first request needs is built and the requests are about to
    go out (a caller starts there what must not delay them).

    Cases given as refs (`load_case_refs`) are never all in memory at once; given as `Case` objects they are
    made refs first (the caller's objects are not kept).

    With `early_stop` (a `stop_early` study), the units go in its looks and the run stops sending when its
    rule says so after a look; the stop is recorded in the manifest's settings (`stop_early`).

    The folder is locked as it is made (`harness.run.lock`): a second writer is refused before anything is sent.
    """
    if study.stop_early != (early_stop is not None):
        raise StudyError("stop_early needs the sequential rule (early_stop), and the rule needs stop_early")
    with contextlib.ExitStack() as lock:
        return _run_locked(study, cases, run_dir, factory, progress, run_id, early_stop, on_record, on_start, lock)


def _run_locked(
    study: Study,
    cases: Sequence[CaseRef | Case],
    run_dir: Path,
    factory: VerifierFactory,
    progress: Progress | None,
    run_id: str | None,
    early_stop: EarlyStop | None,
    on_record: Watch | None,
    on_start: Callable[[], None] | None,
    lock: contextlib.ExitStack,
) -> RunResult:
    if study.store:
        check_store(study.store)
    refs = [c if isinstance(c, CaseRef) else CaseRef.of(c) for c in cases]
    del cases
    pool = [r.load() for r in refs if r.kind == "quality"] if study.perturb else []  # as objects only to perturb
    perturbed = perturb_cases(pool, study.perturb, study.perturb_seed, study.excerpt_chars)
    del pool
    lock.enter_context(holding(run_dir))  # makes the folder
    variants = build_variants(study)
    verifiers: dict[tuple[str, int], Verifier] = {}
    for variant in variants:  # build epoch-1 verifiers first: they fill in prompt hashes
        verifier = factory(variant, 1)
        verifiers[(variant.name, 1)] = verifier
        prompt = verifier.describe().get("prompt")
        if isinstance(prompt, dict):
            variant.prompt_version = _str_or_none(prompt.get("version"))
            variant.prompt_hash = _str_or_none(prompt.get("hash"))
    manifest = make_manifest(study, refs, variants, run_id or run_dir.name, perturbed)
    manifest.verifiers = {v.name: json_safe(verifiers[(v.name, 1)].describe()) for v in variants}
    planned = plan_tasks(refs, variants, study.epochs, study.run_policy, perturbed)
    if study.shard is not None:
        planned = shard_tasks(planned, study.shard, manifest)
    done: set[tuple[str, str, str, int]] = set()
    dropped: list[int] = []
    if study.resume and (run_dir / MANIFEST_FILE).exists():
        old = read_manifest(run_dir)
        check_resumable(old, manifest)
        manifest = manifest.model_copy(update={"run_id": old.run_id, "created": old.created})
        if study.drop_corrupt:
            dropped = drop_corrupt_results(run_dir)
            if not dropped:
                raise ResumeError(f"--drop-corrupt: {run_dir / RESULTS_FILE} has no corrupt line; nothing to drop")
        done = RunLog.read(run_dir).finished_units()
    elif (run_dir / MANIFEST_FILE).exists():
        raise ResumeError(f"{run_dir} already holds a run: pass --resume to finish it, or choose another --out")
    manifest.settings["executor"] = {"name": study.executor}
    manifest.settings["planned_units"] = len(planned)
    write_manifest(run_dir, manifest)
    write_cases(run_dir, refs)

    by_name = {v.name: v for v in variants}
    tasks = [t for t in planned if t.key not in done]
    looks = split_into_looks(planned, early_stop) if early_stop is not None else [planned]

    def verifier_for(task: Task) -> Verifier:
        assert task.variant is not None  # a policy task's verifier is its case's scripted reply (`run_one`)
        key = (task.variant.name, task.epoch)
        if key not in verifiers:
            verifiers[key] = factory(by_name[task.variant.name], task.epoch)
        return verifiers[key]

    # with --no-replay nothing is replayed, but new results are still kept (they refresh the entries)
    replay = ResultReplay(study.cache, code_fingerprint(), read=study.replay) if study.cache is not None else None
    shared_keys: dict[tuple[str, int], str | None] = {}

    def replay_key(task: Task) -> str | None:
        """None for policy cases and for verifiers without a response cache (nothing to replay against)."""
        if task.variant is None:
            return None
        slot = (task.variant.name, task.epoch)
        if slot not in shared_keys:
            reply = verifier_for(task).replay_identity()
            shared_keys[slot] = (
                None
                if reply is None
                else variant_digest(task.variant, reply, task.epoch, study.excerpt_chars, code_fingerprint())
            )
        shared = shared_keys[slot]
        return None if shared is None else task_key(shared, task.case.id, task.content_hash)

    breaker = Breaker.for_run(study, variants)
    watch = both(breaker, on_record)
    progress = progress or SilentProgress()
    stop: dict[str, Any] | None = None
    progress.start(len(tasks) + len(done), len(done))
    if on_start is not None:
        on_start()
    try:
        with ResultWriter(run_dir) as writer, executor_session(study) as executor:
            if ExecutorSettings.model_validate(executor) != manifest.settings.executor:  # a cluster joined
                manifest.settings.executor = ExecutorSettings.model_validate(executor)  # its version and address
                write_manifest(run_dir, manifest)
            with fewer_collections():
                placement: dict[str, Any] = {
                    "case_timeout": study.case_timeout,
                    "store_url": study.store or MEMORY_URL,
                    "namespace_seed": f"{manifest.run_id}\0{manifest.created}\0{run_dir.resolve()}",
                }
                todo = [[t for t in look if t.key not in done] for look in looks]
                check = early_stop.check if early_stop is not None else None
                if study.executor == "ray":
                    new, stop = 0, None
                    for k, look in enumerate(todo, 1):
                        new += _run_on_ray(
                            look, factory, verifiers, writer, study, progress, replay, replay_key, placement, watch
                        )
                        stop = check(k) if check is not None else None
                        if stop is not None and stop["stop"]:
                            break
                else:

                    async def in_looks() -> tuple[int, dict[str, Any] | None]:
                        sent, stop = 0, None
                        for k, look in enumerate(todo, 1):
                            sent += await run_tasks(
                                look, verifier_for, writer, study.concurrency, study.excerpt_chars, progress,
                                replay, replay_key, watch=watch, **placement,
                            )  # fmt: skip
                            stop = check(k) if check is not None else None
                            if stop is not None and stop["stop"]:
                                break
                        return sent, stop

                    new, stop = asyncio.run(_closing(in_looks(), verifiers))
    finally:
        flush_writes()  # the kept replies and results are on disk before the run returns
        progress.stop()
    manifest.components = components(variants, verifiers)
    if stop is not None:
        design = manifest.settings.stop_early or StopEarlySettings()
        manifest.settings.stop_early = design.with_stop(stop_record(stop, looks))
    write_manifest(run_dir, manifest)
    return RunResult(run_dir=run_dir, manifest=manifest, finished=new, skipped=len(done), dropped=dropped)


def check_store(url: str) -> None:
    """Open the store once (creating its tables) before anything runs; `StoreURLError` says why it cannot be."""
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)  # a new file's folder
    try:
        Store(url).close()
    except Exception as exc:  # a bad URL, a missing driver, a refused connection: all exit 2 before the run
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StoreURLError(f"cannot open the store {public_store_url(url)}: {detail}") from None


@contextlib.contextmanager
def executor_session(study: Study) -> Iterator[dict[str, Any]]:
    """What runs the units, as the manifest records it; for Ray, the joined (or started) cluster."""
    if study.executor != "ray":
        yield {"name": "local"}
        return
    from harness.run.ray_executor import ray_session

    with ray_session(study.ray_address) as executor:
        yield executor


def _run_on_ray(
    tasks: list[Task],
    factory: VerifierFactory,
    verifiers: Mapping[Any, Verifier],
    writer: ResultWriter,
    study: Study,
    progress: Progress,
    replay: ResultReplay | None,
    replay_key: Callable[[Task], str | None],
    placement: dict[str, Any],
    watch: Watch | None = None,
) -> int:
    """The units as Ray tasks; the records written here, on the driver. The driver's own verifiers (built for
    describe() and replay keys) are closed after. `placement`: run_tasks' store and deadline arguments."""
    from harness.run.ray_executor import run_on_ray
    from harness.run.schedule import Emitter

    emitter = Emitter(writer, progress, replay, replay_key, watch)
    try:
        run_on_ray(tasks, factory, emitter, study.concurrency, study.excerpt_chars, uuid.uuid4().hex, placement)
    finally:
        asyncio.run(_closing(_nothing(), verifiers))
    return emitter.finished


def both(breaker: Breaker | None, on_record: Watch | None) -> Watch | None:
    """One watch that has the breaker observe each record, then hands it to `on_record` (either may be None)."""
    if breaker is None:
        return on_record

    def watch(record: ResultRecord, case: Case | None) -> None:
        breaker.observe(record)
        if on_record is not None:
            on_record(record, case)

    return watch


async def _nothing() -> int:
    return 0


@contextlib.contextmanager
def fewer_collections(young: int = 20_000) -> Iterator[None]:
    """Cyclic GC tuned for the length of a run, restored after.

    A run allocates fast, so with the default threshold (700) the collector ran some 350 times per 1,000 cases
    and re-scanned everything alive each time (a tenth of its CPU when the run still held every case as
    objects). What is alive at the start (verifiers, modules) is frozen out of the scans, and young
    collections wait for `young` allocations. Nothing is leaked: unfreeze hands the frozen objects back.
    """
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(young, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


async def _closing(work: Coroutine[Any, Any, T], verifiers: Mapping[Any, Verifier]) -> T:
    """Run `work`, then close every verifier's connections in the loop that opened them."""
    try:
        return await work
    finally:
        for verifier in list(verifiers.values()):
            await _aclose(verifier)


async def _aclose(verifier: Verifier) -> None:
    try:
        await verifier.aclose()
    except Exception:  # noqa: S110 - closing is best effort
        pass


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
