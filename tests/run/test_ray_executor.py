"""`--executor ray`: work units as Ray tasks on a local head (127.0.0.1, 2 CPUs), over real HTTP.

225 units (7 quality cases × 4 variants × 4 epochs, as written and under claim-order, and a policy case) give
the local executor's figures; a Ray worker killed mid-run costs nothing: its batch runs again and every unit
is in the log exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.cli import build_parser, main
from harness.cli.run import default_factory, study_from_args
from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.run.folder import read_manifest, read_results
from harness.run.log import ResultRecord
from harness.run.merge import without_timings
from harness.run.runner import run_study
from harness.run.settings import ExecutorSettings
from tests.run.corpus_builder import write_corpus
from tests.run.test_perturb_run import BIASED, UNBIASED, scripted

# One machine: Ray's addresses stay on the loopback (without this a head started for 127.0.0.1 is reached at
# the machine's outward address). Read when ray is imported, and inherited by its workers.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'verifier-bench[ray]' to run these tests")
pytestmark = pytest.mark.slow
UNITS = 1 + 7 * 4 * 4 * 2


@pytest.fixture(scope="module")
def cluster() -> Any:
    """A local Ray head on 127.0.0.1 with 2 CPUs, for this module (the runner joins it: it is initialised)."""
    context = ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield context
    ray.shutdown()


@pytest.fixture
def server(openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> LocalOpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-ray")
    openai_server.responder = scripted
    return openai_server


def argv(server: LocalOpenAIServer, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        *("run", "--cases", str(corpus), "--model", BIASED, "--model", UNBIASED),
        *("--prompt", "baseline", "--prompt", "strict-evidence", "--epochs", "4", "--perturb", "claim-order"),
        *("--base-url", server.base_url, "--out", str(out), "--no-cache", "--no-report", "--concurrency", "4"),
        *extra,
    ]


def summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())


def logged_keys(run: Path) -> Counter[tuple[str, str, str, int]]:
    lines = (run / "results.jsonl").read_text().splitlines()
    return Counter(ResultRecord.model_validate_json(line).key for line in lines)


def test_no_cluster_at_the_address_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if ray.is_initialized():
        pytest.skip("this process already joined a cluster")
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "o"
    code = main(["run", "--cases", str(corpus), "--out", str(out), "--executor", "ray", "--ray-address", "127.0.0.1:1"])
    assert code == 2
    assert "cannot join a Ray cluster" in capsys.readouterr().err
    assert main(["run", "--cases", str(corpus), "--out", str(out), "--ray-address", "127.0.0.1:1"]) == 2
    assert "executor is not ray" in capsys.readouterr().err


def test_ray_gives_the_local_executors_figures(tmp_path: Path, server: LocalOpenAIServer, cluster: Any) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    assert main(argv(server, corpus, tmp_path / "local")) == 0
    assert main(argv(server, corpus, tmp_path / "ray", "--executor", "ray")) == 0
    keys = logged_keys(tmp_path / "ray")
    assert len(keys) == UNITS and set(keys.values()) == {1}  # every unit once, none written twice
    assert without_timings(summary(tmp_path / "ray")) == without_timings(summary(tmp_path / "local"))
    executor = read_manifest(tmp_path / "ray").settings.executor.model_dump()  # type: ignore[union-attr]
    assert executor == {"name": "ray", "version": ray.__version__, "address": cluster.address_info["gcs_address"]}
    assert executor["address"].startswith("127.0.0.1:")
    assert read_manifest(tmp_path / "local").settings.executor == ExecutorSettings(name="local")


def running_batches() -> list[int]:
    """Pids of Ray workers running a batch now (Ray titles a worker process after the task it runs)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if title.startswith(b"ray::run_batch"):
                pids.append(int(entry.name))
    return pids


class KillAWorker:
    """Progress that kills one worker running a batch once `after` records have come back."""

    def __init__(self, after: int) -> None:
        self.after, self.seen, self.killed = after, 0, []

    def start(self, total: int, done: int) -> None: ...

    def stop(self) -> None: ...

    def advance(self, record: ResultRecord) -> None:
        self.seen += 1
        if self.seen < self.after or self.killed:
            return
        deadline = time.monotonic() + 5
        while not self.killed and time.monotonic() < deadline:
            for pid in running_batches()[:1]:
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
            time.sleep(0.01)


def test_a_killed_worker_costs_nothing(tmp_path: Path, server: LocalOpenAIServer, cluster: Any) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    assert main(argv(server, corpus, tmp_path / "local")) == 0
    server.latency_ms = 20  # batches take long enough to be caught running
    args = build_parser().parse_args(argv(server, corpus, tmp_path / "ray", "--executor", "ray"))
    study = study_from_args(args)
    progress = KillAWorker(after=30)
    result = run_study(study, load_cases(study.cases), tmp_path / "ray", default_factory(study), progress)
    assert progress.killed, "no Ray worker was found running a batch to kill"
    assert not any(p == pid for pid in progress.killed for p in running_batches())
    keys = logged_keys(tmp_path / "ray")
    assert len(keys) == UNITS and set(keys.values()) == {1}  # nothing lost, nothing written twice
    assert len(result.records) == UNITS
    assert all(r.error is None for r in read_results(tmp_path / "ray"))
    assert main(["report", str(tmp_path / "ray"), "--rescore"]) == 0
    assert without_timings(summary(tmp_path / "ray")) == without_timings(summary(tmp_path / "local"))
