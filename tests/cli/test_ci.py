"""`vbench ci` (what action.yml and the GitLab recipe run) with the CI's variables set, against the local test
server: the job summary, the comment body (decision first, then the regressed cases), the step outputs, and
the command's own exit code. The action's shell steps are run too, as GitHub would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.cli.ci import COMMENT_MARKER
from harness.devtools.local_server import LocalOpenAIServer
from tests.run.prompt_models import LENIENT_LINE, prompt_dir, prompt_following_responder, write_copies

ROOT = Path(__file__).resolve().parents[2]
WRONG = sorted(f"{q}-{k}" for q in ("q2", "q4", "q5", "q6") for k in (1, 2, 3))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-ci-key-never-in-a-comment")
    with LocalOpenAIServer(prompt_following_responder) as srv:
        yield srv


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    files = {"GITHUB_STEP_SUMMARY": tmp_path / "step-summary.md", "GITHUB_OUTPUT": tmp_path / "github-output"}
    for name, path in files.items():
        path.write_text("")
        monkeypatch.setenv(name, str(path))
    return files


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def gate_args(server: LocalOpenAIServer, tmp_path: Path, candidate: Path) -> list[str]:
    corpus = write_copies(tmp_path / "cases")
    out = tmp_path / "run"
    return [
        "ci", "prompt-gate", "--out", str(out), "--model", "openai:local-model", "--candidate-prompt", str(candidate),
        "--cases", str(corpus), f"--args=--base-url {server.base_url} --no-cache",
    ]  # fmt: skip


def test_a_worse_prompt_is_blocked_and_the_comment_says_so_first(
    tmp_path: Path, server: LocalOpenAIServer, github: dict[str, Path]
) -> None:
    candidate = prompt_dir(tmp_path, "lenient", LENIENT_LINE)
    assert main(gate_args(server, tmp_path, candidate)) == 1  # as `vbench run` exits on a block
    out = outputs(github["GITHUB_OUTPUT"])
    assert out["exit-code"] == "1" and out["decision"] == "block" and out["run-dir"] == str(tmp_path / "run")
    comment = Path(out["comment-file"]).read_text()
    lines = comment.splitlines()
    assert lines[0] == COMMENT_MARKER and lines[1] == "## ❌ verifier-bench prompt gate: BLOCK"
    assert "**BLOCK** openai:local-model@lenient against openai:local-model@baseline" in comment
    regressed = next(line for line in lines if line.startswith("**Regressed cases** (12"))
    assert [c.strip().replace("\\", "") for c in regressed.split("): ", 1)[1].split(",")] == WRONG
    assert comment.index("BLOCK") < comment.index("| metric |") < comment.index("Regressed cases")
    summary_md = (tmp_path / "run" / "summary.md").read_text()
    assert github["GITHUB_STEP_SUMMARY"].read_text().strip() == summary_md.strip()
    assert "sk-test-ci-key" not in comment + github["GITHUB_STEP_SUMMARY"].read_text()


def test_an_equal_prompt_on_a_small_corpus_is_inconclusive_and_exits_0(
    tmp_path: Path, server: LocalOpenAIServer, github: dict[str, Path]
) -> None:
    """21 paired cases cannot rule out a 5-point loss even when every answer agrees: the comment says so, with the
    number of cases that would, and the job passes unless --require-ship is asked for."""
    candidate = prompt_dir(tmp_path, "reworded")  # one harmless line more: the scripted model answers alike
    assert main(gate_args(server, tmp_path, candidate)) == 0
    out = outputs(github["GITHUB_OUTPUT"])
    assert (out["exit-code"], out["decision"]) == ("0", "inconclusive")
    comment = Path(out["comment-file"]).read_text()
    assert "## ⚠️ verifier-bench prompt gate: INCONCLUSIVE" in comment and "**Regressed cases:** none" in comment
    assert "21 paired cases cannot rule out a loss of" in comment and "are needed" in comment


def test_an_equal_prompt_ships_within_a_margin_its_cases_can_support(
    tmp_path: Path, server: LocalOpenAIServer, github: dict[str, Path]
) -> None:
    candidate = prompt_dir(tmp_path, "reworded")
    args = gate_args(server, tmp_path, candidate)
    args[-1] += " --margin 25"
    assert main(args) == 0
    out = outputs(github["GITHUB_OUTPUT"])
    assert (out["exit-code"], out["decision"]) == ("0", "ship")
    assert "## ✅ verifier-bench prompt gate: SHIP" in Path(out["comment-file"]).read_text()


def test_a_refused_command_exits_2_and_still_leaves_a_comment(
    tmp_path: Path, github: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    candidate = prompt_dir(tmp_path, "cand")
    args = ["ci", "prompt-gate", "--out", str(tmp_path / "run"), "--model", "openai:m", "--candidate-prompt"]
    assert main([*args, str(candidate), "--cases", str(write_copies(tmp_path / "cases"))]) == 2
    out = outputs(github["GITHUB_OUTPUT"])
    assert out["exit-code"] == "2" and "no result (exit 2)" in Path(out["comment-file"]).read_text()


def test_certify_mode_against_the_bundled_sut(tmp_path: Path, github: dict[str, Path]) -> None:
    port_file = tmp_path / "port"
    sut = subprocess.Popen(
        [sys.executable, "-c", "from harness.cli import run; run()", "sut", "serve", "--port-file", str(port_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if port_file.exists() and port_file.read_text().strip():
                break
            sut.wait(timeout=0.05) if sut.poll() is not None else None
            import time

            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        cases = str(ROOT / "cases" / "policy" / "gatekeeper")
        code = main(["ci", "certify", "--out", str(tmp_path / "cert"), "--sut", url, "--cases", cases])
    finally:
        sut.terminate()
        sut.wait(timeout=30)
    out = outputs(github["GITHUB_OUTPUT"])
    assert out["exit-code"] == str(code) and out["decision"] in ("certified", "partial", "failed")
    comment = Path(out["comment-file"]).read_text()
    assert comment.splitlines()[1].startswith("## ") and "verifier-bench certification" in comment
    assert "policy cases agreed" in comment


def action_step(name: str) -> dict:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    return next(step for step in action["runs"]["steps"] if step.get("id") == name)


def test_the_actions_run_step_as_github_runs_it(
    tmp_path: Path, server: LocalOpenAIServer, github: dict[str, Path]
) -> None:
    """The action's `run` step executed by bash with its `env:` as GitHub sets it from the inputs."""
    step = action_step("run")
    candidate = prompt_dir(tmp_path, "lenient", LENIENT_LINE)
    corpus = write_copies(tmp_path / "cases")
    inputs = {
        "MODE": "prompt-gate",
        "MODEL": "openai:local-model",
        "CANDIDATE_PROMPT": str(candidate),
        "CONTROL_PROMPT": "baseline",
        "STUDY": "",
        "SUT": "",
        "CASES": str(corpus),
        "OUT": str(tmp_path / "run"),
        "ARGS": f"--base-url {server.base_url} --no-cache",
    }
    assert set(step["env"]) == set(inputs)  # every input the script reads is passed
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, **inputs, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr  # the step itself succeeds: the exit code is an output
    out = outputs(github["GITHUB_OUTPUT"])
    assert (out["exit-code"], out["decision"]) == ("1", "block")
    finish = action_step("finish")
    ended = subprocess.run(["bash", "-e", "-c", finish["run"]], env={**os.environ, "CODE": out["exit-code"]})
    assert ended.returncode == 1  # the action exits as the command did


def test_the_comment_reads_the_summarys_rows_through_their_models() -> None:
    """The decision table names its level, failed threshold gates are listed, a malformed row is refused."""
    from pydantic import ValidationError

    from harness.cli.ci import comment_body
    from harness.score.summary_model import Summary
    from tests.score.test_summary_model import summary

    data = summary()
    data["decisions"][0]["alpha"] = 0.01
    data["gates"].append(
        {"gate": "verdict_accuracy>=0.9", "variant": "cand", "value": 0.5, "threshold": 0.9, "passed": False,
         "detail": "verdict_accuracy = 0.5000"}
    )  # fmt: skip
    body = comment_body("prompt-gate", Summary.model_validate(data), None, 1)
    assert "| metric | control | candidate | Δ [99% CI] | gated |" in body
    assert "**Failed gates:** verdict\\_accuracy>=0.9: verdict\\_accuracy = 0.5000" in body.replace("\\>", ">")
    del data["gates"][-1]["passed"]
    with pytest.raises(ValidationError, match="passed"):
        Summary.model_validate(data)  # a malformed row is refused by the one reader, before any comment is made
