"""Starting a SUT the way a user does: a process that writes its port to a file once it accepts requests."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from aiohttp import web

from harness.devtools.java_sut import stop_process

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
        stop_process(proc)


def serve_args(port_file: Path, *extra: str) -> list[str]:
    return [*VBENCH, "sut", "serve", "--port-file", str(port_file), *extra]


class ThreadedApp:
    """An aiohttp app on 127.0.0.1 in a thread of its own (a stand-in SUT or proxy); `routes` adds its handlers.

    `with Sub(...) as url:` starts it and yields its base URL; leaving the block stops it."""

    def __init__(self) -> None:
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def __enter__(self) -> str:
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            app = web.Application(client_max_size=64 * 1024 * 1024)
            self.routes(app)
            runner = web.AppRunner(app, shutdown_timeout=0.1)
            self._loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            self._loop.run_until_complete(site.start())
            self.port = runner.addresses[0][1]
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
