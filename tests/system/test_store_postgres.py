"""The store on a real PostgreSQL server (the image ships PostgreSQL 15): a SQLAlchemy URL is all it takes."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.system.pipeline import verify_session
from harness.system.store import Store
from harness.system.verifiers.scripted import ScriptedVerifier
from tests.system.builders import INVOCATIONS, binding, claim, emission, output, reply

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(*cmd: str) -> subprocess.CompletedProcess[str]:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *cmd], check=True, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1, stopped and removed afterwards."""
    initdb = PG_BIN / "initdb"
    if not initdb.exists():
        pytest.skip(f"no PostgreSQL server binaries at {PG_BIN}")
    # outside pytest's root-only temp tree, so the postgres user can reach it
    root = Path(tempfile.mkdtemp(prefix="vbench-pg-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    data = root / "data"
    port = _free_port()
    _as_postgres(str(initdb), "-D", str(data), "--auth=trust", "-U", "postgres", "--no-sync")
    # -l: the server must not inherit our pipes, or waiting for the command never ends
    _as_postgres(
        str(PG_BIN / "pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(root / "server.log"),
        "-w",
        "-o",
        f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off",
        "start",
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


def test_postgres_store_persists_and_merges_like_sqlite(postgres_url: str) -> None:
    store = Store(postgres_url)
    try:
        store.clear()
        store.add_session("other", invocations=INVOCATIONS)
        store.add_session(
            "s-1", question="q", invocations=INVOCATIONS[:2], self_evaluation={"executor_self_check": {"ok": True}}
        )
        doc = output(claim("C1"), claim("C2", bindings=[binding("T3", "kubectl_events", ["inv-3"])]))
        ev = asyncio.run(verify_session(store, "s-1", "q", emission(doc), ScriptedVerifier(reply_json=reply())))
        # inv-3 exists only in the other session: fabricated for this one
        assert ev.gatekeeper_result.failed_rules == ["evidence.invocation_ref"]
        assert ev.verdict.value == "REJECT"
        reopened = Store(postgres_url)
        persisted = reopened.self_evaluation("s-1")
        assert persisted["executor_self_check"] == {"ok": True}
        assert persisted["verifier_evaluation"]["gatekeeper_result"]["failed_rules"] == ["evidence.invocation_ref"]
        assert [i.id for i in reopened.invocations("s-1")] == ["inv-1", "inv-2"]
        reopened.close()
    finally:
        store.clear()
        store.close()
