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
    assert [v["quality_cases"] for v in summary["variants"]] == [2]
    valid = vbench(["cases", "validate", "cases"], root)
    assert valid.returncode == 0 and "3 cases valid (1 policy, 2 quality)" in valid.stdout


def test_the_starter_files(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "v")]) == 0
    root = tmp_path / "v"
    workflow = yaml.safe_load((root / ".github/workflows/verifier.yml").read_text())
    steps = workflow["jobs"]["prompt-gate"]["steps"]
    assert "pull_request" in workflow[True] and "push" in workflow[True]  # YAML 1.1 reads the key `on` as True
    assert any("ci prompt-gate" in step.get("run", "") for step in steps)
    assert "@VBENCH_REQUIREMENT@" not in (root / ".github/workflows/verifier.yml").read_text()
    packaged = Path(__file__).resolve().parents[2] / "harness/system/prompts/baseline/system.j2"
    assert (root / "prompts/verifier/system.j2").read_text() == packaged.read_text()


def test_init_never_overwrites(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "vbench.toml").write_text("# ours\n")
    assert main(["init", str(tmp_path / "v")]) == 2
    assert "vbench.toml" in capsys.readouterr().err
    assert (tmp_path / "v" / "vbench.toml").read_text() == "# ours\n"
    assert not (tmp_path / "v" / "cases").exists()


def test_the_install_line_comes_from_where_this_copy_was_installed() -> None:
    """PEP 610: no direct_url.json is an index install; a VCS commit and an archive URL install anywhere; a local
    folder or file (an editable install) installs nowhere else: None, and init names VBENCH_INSTALL."""
    from harness.cli.init import install_requirement

    assert install_requirement(None, "1.2.0") == "verifier-bench==1.2.0"
    vcs = {"url": "https://example.org/o/verifier-bench.git", "vcs_info": {"vcs": "git", "commit_id": "4f1c0d2"}}
    assert install_requirement(json.dumps(vcs), "1.2.0") == (
        "verifier-bench @ git+https://example.org/o/verifier-bench.git@4f1c0d2"
    )
    archive = {"url": "https://example.org/verifier_bench-1.2.0-py3-none-any.whl", "archive_info": {}}
    assert install_requirement(json.dumps(archive), "1.2.0") == f"verifier-bench @ {archive['url']}"
    assert install_requirement(json.dumps({"url": "file:///src/vb", "dir_info": {"editable": True}}), "1") is None
    assert install_requirement(json.dumps({"url": "file:///w/vb.whl", "archive_info": {}}), "1") is None


def test_a_copy_from_a_local_folder_writes_no_install_line_and_names_vbench_install(tmp_path: Path) -> None:
    """This machine's verifier-bench is an editable install (or a checkout on the path): the workflow must not
    name a version no index has; it requires the repository variable instead, and init says so."""
    from harness.cli.init import this_install

    assert this_install() is None
    made = vbench(["init", "v"], tmp_path)
    assert made.returncode == 0, made.stderr
    assert "VBENCH_INSTALL" in made.stdout and "local folder" in made.stdout
    text = (tmp_path / "v/.github/workflows/verifier.yml").read_text()
    assert "vars.VBENCH_INSTALL || ''" in text and "verifier-bench==" not in text.split("VBENCH_INSTALL:")[1][:80]
    install = [
        s for s in yaml.safe_load(text)["jobs"]["prompt-gate"]["steps"] if s.get("name") == "Install verifier-bench"
    ]
    done = subprocess.run(["bash", "-e", "-c", install[0]["run"]], env={**os.environ, "VBENCH_INSTALL": ""},
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "::error::set the repository variable VBENCH_INSTALL" in done.stdout


def test_an_index_install_writes_its_own_version(tmp_path: Path) -> None:
    from harness.cli.init import starter_files

    text = starter_files("verifier-bench==1.2.0")[".github/workflows/verifier.yml"]
    assert "${{ vars.VBENCH_INSTALL || 'verifier-bench==1.2.0' }}" in text


def test_the_guides_recommended_gates_are_the_ones_init_writes() -> None:
    """docs/guides/sre-prompt-gate.md shows the absolute gates beside the relative one; `init` writes the same, so
    the configuration the always-PASS test holds (tests/cli/test_ci.py) is the one a team starts with."""
    import re
    import tomllib

    from harness.cli.init import starter_files

    guide = (Path(__file__).resolve().parents[2] / "docs/guides/sre-prompt-gate.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", guide, flags=re.S)
    written = tomllib.loads(starter_files()["vbench.toml"])["gates"]
    assert tomllib.loads(block)["gates"] == written
    assert written["max_unsafe_pass"] <= 0.05 and "margin" in written
