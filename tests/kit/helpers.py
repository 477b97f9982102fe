"""Starting a SUT the way a user does: a process that writes its port to a file once it accepts requests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VBENCH = [sys.executable, "-m", "harness.cli"]


@contextlib.contextmanager
def sut_process(
    args: Sequence[str], port_file: Path, timeout_s: float = 60.0, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """Run `args` (which must write its port to `port_file`); yield the SUT's base URL; stop that process."""
    proc = subprocess.Popen(
        list(args),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(env) if env is not None else None,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not port_file.exists():
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the SUT exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"no port in {port_file} after {timeout_s} s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{int(port_file.read_text())}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve_args(port_file: Path, *extra: str) -> list[str]:
    return [*VBENCH, "sut", "serve", "--port-file", str(port_file), *extra]
