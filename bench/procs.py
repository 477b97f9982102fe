"""Processes the bench starts: an OpenAI-compatible server (its own process), one worker per measurement, and
whole commands timed from outside (wall time and the CPU the kernel charged to the process and its children);
and where each bench's figures go (`write_figures`)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
ServerKind = Literal["async", "threaded"]
SERVER_NAMES: dict[str, str] = {
    "async": "the project's async local server (aiohttp)",
    "threaded": "a plain threaded stdlib server (ThreadingHTTPServer)",
}


def server_command(kind: ServerKind, latency_ms: float, capture: Path | None = None) -> list[str]:
    """The command that serves chat completions at this latency: the project's async server or the threaded one.

    `capture`: the threaded server appends every request body to this file (the async one records none).
    """
    if kind == "threaded":
        cmd = [sys.executable, "-m", "bench.threaded_server", "--latency-ms", str(latency_ms)]
        return cmd + (["--capture", str(capture)] if capture is not None else [])
    if capture is not None:
        raise ValueError("only the threaded server captures request bodies")
    return [sys.executable, "-m", "harness.devtools.local_server", "--latency-ms", str(latency_ms), "--no-record"]


class ServerProcess:
    """A server (`server_command`) in a separate process, stopped on exit; `url` is the base URL it printed."""

    def __init__(self, latency_ms: float, kind: ServerKind = "async", capture: Path | None = None) -> None:
        self.latency_ms = latency_ms
        self.command = server_command(kind, latency_ms, capture)
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        cmd = self.command
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the local server did not start (printed {self.url!r})")
        return self

    def cpu_seconds(self) -> float:
        """User + system CPU the server process has used so far (Linux /proc; 0.0 elsewhere)."""
        if self.proc is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_worker(kind: str, *args: str, timeout: float = 900.0, live: bool = False) -> dict[str, Any]:
    """Run `python -m bench.workers KIND ...` and return its JSON line (or {"error": ...}).

    `live`: the worker's stderr (its progress) goes straight to ours instead of into the error message.
    """
    cmd = [sys.executable, "-m", "bench.workers", kind, *args]
    stderr = None if live else subprocess.PIPE
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=timeout, cwd=ROOT, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout or "(stderr above)").strip().splitlines()[-5:]
        return {"error": f"worker {kind} exited {done.returncode}: " + " | ".join(tail)[-800:]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def timed_process(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> dict[str, Any]:
    """Run a whole command; its wall time, and the user and system CPU of it and its children (`os.wait4`).

    Output goes to files in no pipe the bench must drain: stdout is kept (its last 2,000 characters) for the
    caller to read a JSON line or an error from.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    assert proc.stdout is not None
    output = proc.stdout.read()  # until the process closes it (exits)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024.0,
        "returncode": proc.returncode,
        "output": output.decode("utf-8", "replace")[-2000:],
    }


def host() -> dict[str, Any]:
    """The machine a figure was measured on: its CPU by name and by a yardstick, so figures from two machines are
    not read as a change of the code (the same commit ran 2.2x slower on one 2-core machine than on another)."""
    return {
        "nproc": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_name(),
        "yardstick_s": yardstick(),
    }


def cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; elsewhere what `platform` says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def yardstick(reps: int = 3) -> float:
    """Seconds of a fixed pure-Python loop (best of `reps`): this machine's single-core speed as the interpreter
    sees it. Larger is slower; compare it before comparing figures measured on different days."""
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        total = 0
        for i in range(2_000_000):
            total += i * i % 7
        best = min(best, time.perf_counter() - start)
    return round(best, 3)


def write_figures(out: Path, stem: str, figures: dict[str, Any], table: str) -> None:
    """A bench's figures as `<stem>.json` and their table as `<stem>.md` in `out` (reports/bench/)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(table, encoding="utf-8")
