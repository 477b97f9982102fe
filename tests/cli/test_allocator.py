"""`vbench` has pyarrow (pandas' string columns) allocate from the system allocator unless the user chose one:
pyarrow's default kept the memory scoring had freed, so a run's peak grew with its cases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import contextlib, io
from harness.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["--version"])
import pyarrow
print(pyarrow.default_memory_pool().backend_name)
"""


@pytest.mark.parametrize(("chosen", "used"), [(None, "system"), ("jemalloc", "jemalloc")])
def test_pyarrow_allocates_from_the_system_unless_the_user_chose(chosen: str | None, used: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == used
