"""Faults on the run path, reproduced with real processes: a second writer, a killed run's report, a full disk, a
store that goes down, SIGINT and SIGTERM at each phase. Each ends with one line, its documented exit code and the
command that resumes the run; then nothing is lost and nothing is sent twice (requests counted at the server)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.cli import Exit, main
from harness.devtools.local_server import LocalOpenAIServer
from harness.run.endpoints import STORE_FAILURES
from harness.run.folder import MANIFEST_FILE, REPORT_FILE, RESULTS_FILE, SUMMARY_FILE, read_results
from tests.postgres_fixtures import cluster
from tests.run.corpus_builder import write_corpus
from tests.run.test_cli_run import ENTRY, api_key, llm_args  # noqa: F401 - api_key: a fixture

pytestmark = pytest.mark.usefixtures("api_key")  # the runs here call an openai: model, which needs a key

EPOCHS = 3
PROMPTS = ("baseline", "strict-evidence")
QUALITY_UNITS = 7 * len(PROMPTS) * EPOCHS  # the corpus' seven quality cases; one policy unit besides
UNITS = QUALITY_UNITS + 1


def run_args(server: LocalOpenAIServer, corpus: Path, out: Path, *extra: str) -> list[str]:
    prompts = [w for p in PROMPTS for w in ("--prompt", p)]
    return llm_args(server, corpus, out, *prompts, "--epochs", str(EPOCHS), "--no-cache", "--concurrency", "2", *extra)


def start(args: list[str]) -> subprocess.Popen[str]:
    """`vbench` in a process of its own (the key set, stderr kept)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-never-written-anywhere-1234"}
    return subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str] | None = None, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert proc is None or proc.poll() is None, f"the run ended first: {proc.returncode} {proc.stderr.read()}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def said(stderr: str) -> list[str]:
    """What a stopped command printed besides its progress lines."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("verifying ")]


def resume_args(line: str) -> list[str]:
    """The arguments of the `vbench ...` command a stop line gives."""
    command = shlex.split(line[line.index("vbench ") :])
    assert command[0] == "vbench" and "--resume" in command, line
    return command[1:]


_finished_before: dict[Path, int] = {}


def finished_quality(out: Path, before: bool = False) -> int:
    """Quality units with a reply in the folder (`before`: as recorded by the last call without it)."""
    if before:
        return _finished_before[out]
    _finished_before[out] = sum(r.kind == "quality" and r.error is None for r in read_results(out))
    return _finished_before[out]


def assert_whole(out: Path) -> None:
    """Every planned unit has exactly one record."""
    records = read_results(out)
    assert len(records) == UNITS and len({r.key for r in records}) == UNITS
    raw = [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]
    assert len(raw) == UNITS  # no unit written twice


# --- one writer ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_writer_is_refused_before_it_sends_anything(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    with LocalOpenAIServer(latency_ms=100) as server:
        first = start(run_args(server, corpus, out))
        wait_for(lambda: lines(out / RESULTS_FILE) >= 2, first)
        second = start(run_args(server, corpus, out, "--resume"))
        assert second.wait(timeout=120) == Exit.USAGE
        message = said(second.stderr.read())  # type: ignore[union-attr]
        assert len(message) == 1 and "is being written by another vbench process" in message[0], message
        assert first.wait(timeout=120) == Exit.OK
        assert server.request_count == QUALITY_UNITS  # the refused writer sent nothing
    assert_whole(out)


@pytest.mark.slow
def test_a_dead_writer_holds_no_lock_and_its_temp_files_are_removed(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    with LocalOpenAIServer(latency_ms=100) as server:
        args = run_args(server, corpus, out)
        killed = start(args)
        wait_for(lambda: lines(out / RESULTS_FILE) >= 4, killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        finished_quality(out)
        stale = out / f".{SUMMARY_FILE}.{killed.pid}.tmp"  # what a writer killed mid-write leaves
        stale.write_text("{half")
        live = out / f".{REPORT_FILE}.{os.getpid()}.tmp"  # a live process's: not ours to remove
        live.write_text("<html")
        server.reset()
        assert main([*args, "--resume"]) == Exit.OK
        assert server.request_count == QUALITY_UNITS - finished_quality(out, before=True)
    assert not stale.exists() and live.exists()
    assert_whole(out)


def hold(folder: Path) -> subprocess.Popen[str]:
    """Another process that holds `folder`'s lock until it is killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from harness.run.lock import acquire; from pathlib import Path; "
         f"acquire(Path({str(folder)!r})); print('held', flush=True); import time; time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_the_lock_refuses_another_process_and_is_free_once_it_dies(tmp_path: Path) -> None:
    out = tmp_path / "run"
    holder = hold(out)
    corpus = write_corpus(tmp_path / "cases")
    assert main(["run", "--cases", str(corpus), "--out", str(out), "--no-report", "--no-cache"]) == Exit.USAGE
    assert not (out / MANIFEST_FILE).exists()  # refused before anything was written
    holder.kill()
    holder.wait(timeout=10)
    assert main(["run", "--cases", str(corpus), "--out", str(out), "--no-report", "--no-cache"]) == Exit.OK


@pytest.mark.slow
def test_report_and_merge_respect_the_lock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "cases")
    run, merged = tmp_path / "run", tmp_path / "merged"
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, shard in enumerate(shards, 1):
        assert main(
            ["run", "--cases", str(corpus), "--out", str(shard), "--shard", f"{i}/2", "--no-report", "--no-cache"]
        ) in (0, 1)
    assert main(["run", "--cases", str(corpus), "--out", str(run), "--no-report", "--no-cache"]) == Exit.OK
    capsys.readouterr()
    holders = [hold(run), hold(merged)]
    try:
        assert main(["report", str(run), "--rescore"]) == Exit.USAGE
        assert main(["merge", *map(str, shards), "--out", str(merged)]) == Exit.USAGE
        errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
        assert len(errors) == 2 and all("is being written by another vbench process" in e for e in errors), errors
        assert not (run / REPORT_FILE).exists() and not (merged / MANIFEST_FILE).exists()
    finally:
        for holder in holders:
            holder.kill()
            holder.wait(timeout=10)
    assert main(["report", str(run), "--rescore"]) == Exit.OK
    assert main(["merge", *map(str, shards), "--out", str(merged), "--no-report"]) == Exit.OK


# --- a report of an unfinished run ----------------------------------------------------------------


@pytest.mark.slow
def test_a_report_of_a_killed_run_says_unfinished_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    with LocalOpenAIServer(latency_ms=100) as server:
        args = run_args(server, corpus, out, "--max-error-rate", "0.5")
        killed = start(args)
        wait_for(lambda: lines(out / RESULTS_FILE) >= 4, killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        written = len(read_results(out))
        assert written < UNITS

        assert main(["report", str(out)]) == Exit.GATE
        err = capsys.readouterr().err
        assert f"unfinished: {out} holds {written} of {UNITS} results" in err and "--resume" in err, err
        summary = json.loads((out / SUMMARY_FILE).read_text())
        assert summary["passed"] is False and summary["run"]["unfinished"] == {"results": written, "planned": UNITS}
        gates = {g["gate"]: g for g in summary["gates"]}
        assert gates["run_finished"]["passed"] is False
        # the error rate counts the cases never run: far more than half of each variant's are missing
        assert all(not g["passed"] for g in summary["gates"] if g["gate"].startswith("error_rate"))
        assert "unfinished" in (out / "summary.md").read_text().splitlines()[0]
        assert "UNFINISHED" in (out / REPORT_FILE).read_text() and "PASSED" not in (out / REPORT_FILE).read_text()

        assert main([*args, "--resume"]) == Exit.OK
        assert main(["report", str(out)]) == Exit.OK  # finished: the same report passes
    summary = json.loads((out / SUMMARY_FILE).read_text())
    assert "unfinished" not in summary["run"] and summary["passed"] is True
    assert_whole(out)


# --- signals ----------------------------------------------------------------------------------------

SIGNALS = {"SIGINT": (signal.SIGINT, Exit.INTERRUPTED), "SIGTERM": (signal.SIGTERM, Exit.TERMINATED)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIGNALS))
@pytest.mark.parametrize("phase", ["starting", "running"])
def test_a_signal_ends_the_run_with_one_line_its_code_and_the_resume_command(
    tmp_path: Path, name: str, phase: str
) -> None:
    sig, code = SIGNALS[name]
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    latency = 1500 if phase == "starting" else 100  # starting: the requests are out, no reply has come yet
    with LocalOpenAIServer(latency_ms=latency) as server:
        proc = start(run_args(server, corpus, out))
        if phase == "starting":
            wait_for(lambda: (out / MANIFEST_FILE).exists() and server.request_count > 0, proc)
        else:
            wait_for(lambda: lines(out / RESULTS_FILE) >= 4, proc)
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == code
        message = said(proc.stderr.read())  # type: ignore[union-attr]
        assert len(message) == 1 and message[0].startswith(f"{name.lower()}: stopped;"), message
        assert str(out) in message[0]
        done = finished_quality(out)
        server.reset()
        server.latency_ms = 0
        assert main(resume_args(message[0])) == Exit.OK
        assert server.request_count == QUALITY_UNITS - done  # nothing finished is sent again
    assert_whole(out)


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_a_signal_before_the_run_started_says_nothing_was_written(tmp_path: Path, name: str) -> None:
    """Stopped while it checks its endpoint (one that accepts and never answers): no folder, the command again."""
    sig, code = SIGNALS[name]
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        proc = start(["run", "--cases", str(corpus), "--model", "openai:local-model", "--base-url", base_url,
                      "--out", str(out)])  # fmt: skip
        silent.settimeout(60)
        conn, _ = silent.accept()  # the reachability probe: the run has not started
        with conn:
            proc.send_signal(sig)
            assert proc.wait(timeout=60) == code
    message = said(proc.stderr.read())  # type: ignore[union-attr]
    assert len(message) == 1 and message[0].startswith(f"{name.lower()}: stopped; nothing was written"), message
    assert message[0].endswith(shlex.join(["vbench", "run", "--cases", str(corpus), "--model", "openai:local-model",
                                           "--base-url", base_url, "--out", str(out)]))  # fmt: skip
    assert not out.exists()


def offline_args(corpus: Path, out: Path) -> list[str]:
    return ["run", "--cases", str(corpus), "--out", str(out), "--epochs", "150", "--no-cache", "--no-report"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_a_signal_while_the_run_is_scored_ends_with_its_code_and_resume_finishes_it(tmp_path: Path, name: str) -> None:
    """After the last record, before summary.json: the finishing phase. An offline run of 1,051 units takes a
    moment to score, long enough to land the signal in it."""
    sig, code = SIGNALS[name]
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    total = 7 * 150 + 1
    proc = start(offline_args(corpus, out))
    wait_for(lambda: lines(out / RESULTS_FILE) >= total, proc)
    proc.send_signal(sig)
    returned = proc.wait(timeout=60)
    if (out / SUMMARY_FILE).exists() and returned == Exit.OK:
        pytest.skip("the run was scored before the signal landed")  # not seen on this machine; never a pass
    assert returned == code
    message = said(proc.stderr.read())  # type: ignore[union-attr]
    assert len(message) == 1 and message[0].startswith(f"{name.lower()}: stopped;"), message
    assert main(resume_args(message[0])) == Exit.OK
    assert not list(out.glob(".*.tmp"))
    assert json.loads((out / SUMMARY_FILE).read_text())["run"]["results"] == total
    assert len(read_results(out)) == total


@pytest.mark.slow
def test_nothing_is_written_for_a_run_killed_while_it_is_scored(tmp_path: Path) -> None:
    """The finishing child of a run killed with -9 writes no summary, certificate or report on its behalf."""
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    total = 7 * 150 + 1
    proc = start(offline_args(corpus, out))
    wait_for(lambda: lines(out / RESULTS_FILE) >= total, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    if (out / SUMMARY_FILE).exists():
        pytest.skip("the run was scored before the kill landed")
    time.sleep(5)  # a child left behind would write within this (scoring the run takes about a second)
    assert not (out / SUMMARY_FILE).exists() and not (out / "certificate.json").exists()


# --- a full disk ------------------------------------------------------------------------------------


@contextmanager
def small_disk(path: Path, size_kib: int) -> Iterator[Path]:
    """A tmpfs of `size_kib` mounted at `path` (root only; the test is skipped where mounting is impossible)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def grow(path: Path, size_kib: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size_kib}k", str(path)], check=True)


@pytest.mark.parametrize("while_writing", ["results", "summary"])
def test_a_full_disk_ends_with_one_line_exit_2_and_resume_finishes_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], while_writing: str
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    args = ["run", "--cases", str(corpus), "--epochs", "30", "--no-cache", "--no-report"]
    whole = tmp_path / "whole"
    assert main([*args, "--out", str(whole)]) == Exit.OK
    results_kib = (whole / RESULTS_FILE).stat().st_size // 1024
    before_summary = sum(
        p.stat().st_size for p in whole.iterdir() if p.name in (RESULTS_FILE, MANIFEST_FILE, "cases.jsonl")
    )
    size = results_kib // 3 if while_writing == "results" else before_summary // 1024 + 12
    with small_disk(tmp_path / "disk", size) as disk:
        out = disk / "run"
        capsys.readouterr()
        assert main([*args, "--out", str(out)]) == Exit.USAGE
        message = said(capsys.readouterr().err)
        assert len(message) == 1 and message[0].startswith("error: no space left on the device"), message
        assert "--resume" in message[0] and str(out) in message[0]
        if while_writing == "summary":
            assert len(read_results(out)) == 7 * 30 + 1 and not (out / SUMMARY_FILE).exists()
        assert not list(out.glob(".*.tmp"))
        grow(disk, 64 * 1024)
        assert main(resume_args(message[0])) == Exit.OK
        records = read_results(out)
        assert len(records) == 7 * 30 + 1 and len({r.key for r in records}) == len(records)
        summary = json.loads((out / SUMMARY_FILE).read_text())
        assert summary["run"]["results"] == 7 * 30 + 1 and summary["passed"]


# --- a store that goes down --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_store_that_goes_down_stops_the_run_with_the_resume_command(tmp_path: Path) -> None:
    """A PostgreSQL store stopped mid-run: the run stops after a few cases with one line naming the store and the
    resume command (not every remaining case a harness error); once the store is back the resumed run finishes,
    sending again only the units that had no reply."""
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    with cluster() as store, LocalOpenAIServer(latency_ms=100) as server:
        proc = start(run_args(server, corpus, out, "--store", store.url))
        wait_for(lambda: lines(out / RESULTS_FILE) >= 6, proc)
        store.stop()
        assert proc.wait(timeout=120) == Exit.USAGE
        message = said(proc.stderr.read())  # type: ignore[union-attr]
        assert len(message) == 1 and "could not use the store" in message[0] and "--resume" in message[0], message
        assert "postgresql" in message[0] and "127.0.0.1" in message[0]
        records = read_results(out)
        failed = [r for r in records if r.error is not None]
        assert {r.error.split(":")[0] for r in failed} == {"store_unavailable"}  # type: ignore[union-attr]
        assert STORE_FAILURES <= len(failed) <= STORE_FAILURES + 2  # the limit, and the cases in flight then
        assert len(records) < UNITS
        done = finished_quality(out)
        store.start()
        server.reset()
        assert main(resume_args(message[0])) == Exit.OK
        assert server.request_count == QUALITY_UNITS - done
    latest = read_results(out)
    assert len(latest) == UNITS and all(r.error is None for r in latest)
