"""The package works installed, not only from a checkout: a wheel in a fresh venv, run from another folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_carries_the_spec_catalogue_and_runs_from_another_folder(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("verifier_bench-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    # the dependencies come from this interpreter's site-packages; the package itself only from the wheel
    # (an editable install of the checkout is a .pth hook, which PYTHONPATH entries never run)
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    where = tmp_path / "elsewhere"
    where.mkdir()
    probe = "import harness, harness.corpus.catalogue as c; print(harness.__file__); print(len(c.load_catalogue()))"
    out = subprocess.run([python, "-c", probe], cwd=where, env=env, check=True, capture_output=True, text=True).stdout
    location, scenarios = out.split()
    assert Path(location).is_relative_to(env_dir) and int(scenarios) == 22
    run = subprocess.run(
        [
            env_dir / "bin" / "vbench",
            "run",
            "--cases",
            str(ROOT / "cases" / "policy"),
            "--out",
            str(where / "r"),
        ],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads((where / "r" / "summary.json").read_text())
    scenarios = summary["conformance"]["scenarios"]
    assert len(scenarios) == 22 and summary["conformance"]["uncovered_scenarios"] == []
    page = (where / "r" / "report.html").read_text()  # the packaged templates and assets rendered it
    assert "<html" in page and "Certified" in page and "<style" in page
