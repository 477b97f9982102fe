"""`vbench init DIR && cd DIR && vbench run`: a team's starting point runs as written, offline."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from harness.cli import main

ENTRY = "from harness.cli import run; run()"


def offline_env() -> dict[str, str]:
    """No key, no endpoint, and every HTTP proxy a closed local port: any request would fail, not leave."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return env | {"HTTP_PROXY": closed, "HTTPS_PROXY": closed, "ALL_PROXY": closed, "NO_PROXY": ""}


def vbench(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], cwd=cwd, env=offline_env(), capture_output=True, text=True, timeout=300
    )


def test_init_then_run_works_offline(tmp_path: Path) -> None:
    made = vbench(["init", "my-verifier"], tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "my-verifier"
    study = root / "vbench.toml"
    study.write_text(study.read_text().replace('cases = ["cases"]', 'cases = ["cases"]\nepochs = 2'))
    ran = vbench(["run"], root)  # no --study: vbench.toml in the current folder is the study
    assert ran.returncode == 0, ran.stderr
    (run_dir,) = (root / "reports").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert sorted(Path(d).as_posix() for d in manifest["case_dirs"]) == ["cases"]
    assert manifest["epochs"] == 2  # read from vbench.toml
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["conformance"]["policy_cases"] == 1 and summary["conformance"]["passed"]
    assert [v["quality_cases"] for v in summary["variants"]] == [1]
    valid = vbench(["cases", "validate", "cases"], root)
    assert valid.returncode == 0 and "2 cases valid (1 policy, 1 quality)" in valid.stdout


def test_the_starter_files(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "v")]) == 0
    root = tmp_path / "v"
    workflow = yaml.safe_load((root / ".github/workflows/verifier.yml").read_text())
    steps = workflow["jobs"]["prompt-gate"]["steps"]
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    assert any("vbench ci prompt-gate" in step.get("run", "") for step in steps)
    assert "@VBENCH_VERSION@" not in (root / ".github/workflows/verifier.yml").read_text()
    packaged = Path(__file__).resolve().parents[2] / "harness/system/prompts/baseline/system.j2"
    assert (root / "prompts/verifier/system.j2").read_text() == packaged.read_text()


def test_init_never_overwrites(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "vbench.toml").write_text("# ours\n")
    assert main(["init", str(tmp_path / "v")]) == 2
    assert "vbench.toml" in capsys.readouterr().err
    assert (tmp_path / "v" / "vbench.toml").read_text() == "# ours\n"
    assert not (tmp_path / "v" / "cases").exists()
