"""The Ray executor (`--executor ray`, extra `verifier-bench[ray]`): work units as Ray tasks on a cluster.

The driver plans, answers replayable units from the replay store, and sends the rest in batches to Ray tasks.
A worker process keeps its own model clients (verifiers, built once per variant × epoch by the run's factory)
and event loop across the batches it runs; each batch runs the ordinary scheduler (`run_tasks`) against its
own stores. Records come back to the driver as each batch finishes, and only the driver writes the run log
(the `Emitter`), so resume, response cache and replay behave as with the local executor.

A worker that dies takes its batch with it, unreported: Ray runs the batch again (`max_retries`), and since
nothing of it reached the log, nothing is lost or written twice. A batch that still fails after its retries
becomes error records, which the run keeps and `--resume` retries.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from harness import UsageError
from harness.llm.entries import flush_writes
from harness.run.log import ResultRecord, VariantInfo
from harness.run.records import record_from_crash
from harness.run.schedule import Emitter, SilentProgress, Task, run_tasks
from harness.system.verifiers.base import Verifier

BATCH_RETRIES = 5
"""Times Ray runs a batch again after its worker died (a failing unit is an error record, not a retry)."""
MAX_BATCH = 32
_WORKER_STATE: dict[str, Any] = {}
"""Per worker process: the run token it serves, its event loop and its verifiers."""


class RayUnavailable(UsageError):
    """--executor ray without Ray installed, or a cluster that cannot be joined (exit code 2)."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            "--executor ray needs Ray: pip install 'verifier-bench[ray]' (or pip install ray)"
        ) from exc
    return ray


@contextmanager
def ray_session(address: str | None) -> Iterator[dict[str, Any]]:
    """Join the cluster at `address` (default: start a local one), or use the one this process already joined.

    Yields what the manifest records: executor `ray`, its version and the cluster's address. A cluster this
    function started is shut down after the run.
    """
    ray = _ray()
    started = False
    if not ray.is_initialized():
        if address:
            probe(address)
        try:
            ray.init(address=address or "local", include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # ConnectionError, ValueError: an address that names no cluster
            raise RayUnavailable(f"--ray-address {address or 'local'}: cannot join a Ray cluster: {exc}") from exc
        started = True
    try:
        yield {"name": "ray", "version": ray.__version__, "address": recorded_address(ray)}
    finally:
        if started:
            ray.shutdown()


def probe(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when nothing listens at a host:port address (Ray itself waits minutes for a missing cluster)."""
    target = address.split("://", 1)[-1].rsplit("@", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return  # 'auto' and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(
            f"--ray-address {address}: cannot join a Ray cluster: nothing answers there ({exc})"
        ) from exc


def recorded_address(ray: Any) -> str:
    """The cluster's address without any user info (what a manifest may keep)."""
    address = str(ray.get_runtime_context().gcs_address or "")
    return address.rsplit("@", 1)[-1]


def run_on_ray(
    tasks: Sequence[Task],
    factory: Callable[[VariantInfo, int], Verifier],
    emitter: Emitter,
    concurrency: int,
    excerpt_chars: int,
    token: str,
    placement: dict[str, Any] | None = None,
) -> None:
    """Run `tasks` as Ray tasks, each record emitted on the driver as its batch returns.

    `token` names the run, so a worker reuses its verifiers only for the run that built them; `placement`:
    `run_tasks`' keyword arguments for stores and deadlines (case_timeout, store_url, namespace_seed).
    """
    ray = _ray()
    pending: list[tuple[Task, str | None]] = []
    for task in tasks:
        key = emitter.key_of(task)
        kept = emitter.replayed(task, key)
        if kept is not None:
            emitter.emit(kept, key)
        else:
            pending.append((task, key))
    if not pending:
        return
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    size = max(1, min(MAX_BATCH, -(-len(pending) // (cpus * 4))))
    batches = [pending[i : i + size] for i in range(0, len(pending), size)]
    remote = ray.remote(max_retries=BATCH_RETRIES, retry_exceptions=False)(run_batch)
    factory_ref = ray.put(factory)
    in_flight: dict[Any, list[tuple[Task, str | None]]] = {}
    queue = list(reversed(batches))
    window = cpus * 2
    while queue or in_flight:
        while queue and len(in_flight) < window:
            batch = queue.pop()
            ref = remote.remote(token, factory_ref, [t for t, _ in batch], concurrency, excerpt_chars, placement or {})
            in_flight[ref] = batch
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            _collect(ray, ref, in_flight.pop(ref), emitter)


def _collect(ray: Any, ref: Any, batch: list[tuple[Task, str | None]], emitter: Emitter) -> None:
    """Emit a finished batch's records; a batch Ray gave up on becomes one error record per unit."""
    keys = {task.key: key for task, key in batch}
    try:
        lines: list[str] = ray.get(ref)
    except Exception as exc:
        for task, key in batch:
            error = f"harness_error: ray: {type(exc).__name__}: {str(exc)[:300]}"
            record = record_from_crash(
                task.case.load(), task.variant_name, task.epoch, error, task.case.hash, task.perturbed
            )
            emitter.emit(record, key)
        return
    for line in lines:
        record = ResultRecord.model_validate_json(line)
        emitter.emit(record, keys.get(record.key), line)


class _Lines:
    """A writer that keeps the lines (a worker hands them back; it never writes a log)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def run_batch(
    token: str,
    factory: Callable[[VariantInfo, int], Verifier],
    tasks: list[Task],
    concurrency: int,
    excerpt_chars: int,
    placement: dict[str, Any],
) -> list[str]:
    """On a Ray worker: run a batch with this process's verifiers and event loop; the records as JSON lines."""
    if _WORKER_STATE.get("token") != token:
        _WORKER_STATE.clear()
        _WORKER_STATE.update(token=token, loop=asyncio.new_event_loop(), verifiers={}, pid=os.getpid())
    verifiers: dict[tuple[str, int], Verifier] = _WORKER_STATE["verifiers"]

    def verifier_for(task: Task) -> Verifier:
        assert task.variant is not None  # a policy task's verifier is its case's scripted reply (`run_one`)
        slot = (task.variant.name, task.epoch)
        if slot not in verifiers:
            verifiers[slot] = factory(task.variant, task.epoch)
        return verifiers[slot]

    sink = _Lines()
    loop: asyncio.AbstractEventLoop = _WORKER_STATE["loop"]
    work = run_tasks(tasks, verifier_for, sink, concurrency, excerpt_chars, SilentProgress(), **placement)
    loop.run_until_complete(work)
    flush_writes()  # this worker's cached replies are on disk before its batch is handed back
    return sink.lines
