"""`vbench label serve` as a real process on 127.0.0.1 for the tests: started, its port read from the port
file, killed with SIGKILL (as a crash would) and restarted."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class LabelServer:
    def __init__(self, folder: Path, annotator: str, port_file: Path) -> None:
        self.folder, self.annotator, self.port_file = folder, annotator, port_file
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.extra: tuple[str, ...] = ()

    def start(self, port: int = 0, *extra: str) -> str:
        """Start it (on `port`: the same one again after a kill keeps open tabs' address)."""
        self.port_file.unlink(missing_ok=True)
        self.extra = extra = extra or self.extra
        who = ["--annotator", self.annotator] if self.annotator else []
        cmd = [sys.executable, "-m", "harness.cli", "label", "serve", str(self.folder), *who,
               "--port", str(port), "--port-file", str(self.port_file), *extra]  # fmt: skip
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not self.port_file.exists():  # (a port just freed by a kill may take a moment to bind again)
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"label serve exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError("label serve wrote no port file")
            time.sleep(0.05)
        self.port = int(self.port_file.read_text())
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def restart(self) -> str:
        """SIGKILL, then start again on the same port."""
        port = self.port
        self.kill()
        return self.start(port)

    def kill(self) -> None:
        """SIGKILL: no clean-up runs, as when the machine or the process dies."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@contextlib.contextmanager
def label_server(folder: Path, annotator: str, tmp_path: Path, *extra: str) -> Iterator[LabelServer]:
    """A server for `annotator` ("" for one that serves any annotator), killed at the end."""
    server = LabelServer(folder, annotator, tmp_path / f"port-{annotator or 'any'}")
    server.start(0, *extra)
    try:
        yield server
    finally:
        server.kill()
