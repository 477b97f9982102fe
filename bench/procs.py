"""Processes the bench starts: the local OpenAI-compatible server (its own process) and one worker per measurement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class ServerProcess:
    """`python -m harness.devtools.local_server --latency-ms L --no-record` in a separate process, stopped on exit."""

    def __init__(self, latency_ms: float) -> None:
        self.latency_ms = latency_ms
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        cmd = [
            sys.executable,
            "-m",
            "harness.devtools.local_server",
            "--latency-ms",
            str(self.latency_ms),
            "--no-record",
        ]
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
