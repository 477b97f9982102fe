"""The shared `postgres_url` fixture: a throwaway PostgreSQL cluster on 127.0.0.1 (Debian's `postgresql`).

Re-exported from tests/conftest.py. Without the server binaries the tests that use it are skipped, unless
`VBENCH_REQUIRE_POSTGRES=1` (set by `.ci/run`, which installs them): then they fail, so CI cannot pass by skipping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def pg_bin() -> Path | None:
    """The newest `/usr/lib/postgresql/<version>/bin` that has initdb."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(*cmd: str) -> subprocess.CompletedProcess[str]:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *cmd], check=True, capture_output=True, text=True, timeout=120)


class Cluster:
    """A throwaway PostgreSQL cluster on 127.0.0.1 in `root`, which a test may stop and start again."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin_dir, self.root, self.data, self.port = bin_dir, root, root / "data", _free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        _as_postgres(str(bin_dir / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        # -l: the server must not inherit our pipes, or waiting for the command never ends
        _as_postgres(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-o",
            f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )

    def stop(self) -> None:
        _as_postgres(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A started `Cluster`, removed afterwards; the test is skipped without the server binaries (failed under
    `VBENCH_REQUIRE_POSTGRES=1`)."""
    bin_dir = pg_bin()
    if bin_dir is None:
        message = "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)"
        if os.environ.get("VBENCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # outside pytest's root-only temp tree, so the postgres user can reach it
    root = Path(tempfile.mkdtemp(prefix="vbench-pg-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    made = Cluster(bin_dir, root)
    made.start()
    try:
        yield made
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            made.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL cluster on 127.0.0.1 for this test session, stopped and removed afterwards."""
    with cluster() as made:
        yield made.url
