"""The starter workflow, run step by step on 30 commits of prompt changes: what a team lives with.

A git repository (a bare `origin` and clones of it, as runners make) gets the files `vbench init` writes, a
140-case corpus and the workflow; each commit runs the workflow's own `run:` steps (tests/cli/workflow_runner.py)
against a local OpenAI-compatible server and a local stand-in for GitHub's comments API, nothing else:

- the pull request that adds the workflow finds no prompt on main: a bootstrap run, commented, exit 0;
- every push to main is measured and recorded on the history branch;
- a chain of pull requests each losing one case (0.7 pp: too little for its own paired test) each ships against
  main's recorded run, with no request for the control's prompt; with the anchor (the first release, tagged in
  the history) the chain is stopped before its loss passes the 5 pp margin, and the decision names the anchor.

The scripted model reads the prompt's `drift N` line: it answers the first N cases of a fixed order wrongly
(never with an unsafe PASS) and every other case right, so each step's loss is known exactly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.cli.init import starter_files
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import last_user_message
from harness.system.prompts.variant import PROMPTS_DIR
from tests.cli.github_api import TOKEN, GitHubAPI
from tests.cli.workflow_runner import JobRun, github_env, load, run_job, vbench_shim
from tests.run.corpus_builder import GOLD
from tests.run.prompt_models import system_text, write_copies

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COPIES = 20  # 7 hand-computed cases x 20 = 140: one case is 0.71 pp
MODEL = "openai:local-model"
REPO = "team/verifier"
WORKFLOW = ".github/workflows/verifier.yml"
LOSS_ORDER = [f"{q}-{k}" for k in range(1, COPIES + 1) for q in ("q1", "q2", "q4", "q5", "q6", "q7")]
"""The cases a drifting prompt gets wrong, first to last (q3 accepts two verdicts: never used)."""
WRONG: dict[str, tuple[dict[str, str], str]] = {
    "q1": ({"C1": "direct_observation", "C2": "unsupported"}, "LOW_CONFID"),
    "q7": ({"C1": "direct_observation", "C2": "unsupported"}, "LOW_CONFID"),
    "q2": ({"C1": "direct_observation", "C2": "unsupported"}, "LOW_CONFID"),
    "q5": ({"C1": "unsupported", "C2": "direct_observation"}, "LOW_CONFID"),
    "q4": ({"C1": "contradicted", "C2": "direct_observation"}, "REJECT"),
    "q6": ({"C1": "contradicted", "C2": "external_unknown"}, "REJECT"),
}
"""A wrong but never unsafe answer per case kind: the verdict changes, and no gold-non-PASS case gets a PASS."""
_CASE = re.compile(r"\[(q\d-\d+)\]")
_DRIFT = re.compile(r"drift (\d+)\.")


class ChainModel:
    """The scripted model: right on every case but the first `drift` of LOSS_ORDER; each request is logged."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        case = _CASE.search(last_user_message(body))
        drift = _DRIFT.search(system_text(body))
        assert case and drift, "the chain model needs a case id and a drift line"
        case_id, n = case.group(1), int(drift.group(1))
        self.asked.append((case_id, n))
        group = case_id.split("-")[0]
        labels, verdict = WRONG[group] if case_id in LOSS_ORDER[:n] else GOLD[group]
        checks = [
            {"claim_id": c, "verification": label if isinstance(label, str) else label[0], "detail": "scripted",
             "evidence_refs": []}
            for c, label in labels.items()
        ]  # fmt: skip
        reply = {"verdict": verdict if isinstance(verdict, str) else verdict[0], "groundedness_score": 0.9,
                 "critical_fact_count": len(checks), "claim_checks": checks, "facts_checked": [], "rationale": "x"}  # fmt: skip
        return json.dumps(reply)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def write_prompt(repo: Path, revision: int, drift: int) -> None:
    target = repo / "prompts/verifier"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(PROMPTS_DIR / "baseline", target)
    system = target / "system.j2"
    system.write_text(system.read_text() + f"\nPrompt revision {revision}; drift {drift}.\n")


class Team:
    """The repository, its origin, the servers, and the jobs run so far."""

    def __init__(self, tmp: Path, server: LocalOpenAIServer, model: ChainModel, api: GitHubAPI) -> None:
        self.tmp, self.server, self.model, self.api = tmp, server, model, api
        self.origin = tmp / "origin.git"
        subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(self.origin)], check=True)
        self.dev = tmp / "dev"
        subprocess.run(["git", "clone", "--quiet", str(self.origin), str(self.dev)], check=True, capture_output=True)
        git(self.dev, "config", "user.name", "dev")
        git(self.dev, "config", "user.email", "dev@example.org")
        git(self.dev, "checkout", "--quiet", "-b", "main")
        (self.dev / "README.md").write_text("our verifier\n")
        git(self.dev, "add", "-A")
        git(self.dev, "commit", "--quiet", "-m", "start")
        git(self.dev, "push", "--quiet", "origin", "main")
        self.jobs = 0
        self.main_commits: list[str] = []
        self.workflow: dict[str, Any] = {}
        self.bin = vbench_shim(tmp / "bin")

    def commit(self, message: str) -> str:
        git(self.dev, "add", "-A")
        git(self.dev, "commit", "--quiet", "-m", message)
        return git(self.dev, "rev-parse", "HEAD")

    def contexts(self, event: str, sha: str, pr: int | None, anchor: str = "") -> dict[str, Any]:
        github: dict[str, Any] = {"event_name": event, "repository": REPO, "token": TOKEN, "sha": sha,
                                  "base_ref": "main" if pr else "", "event": {}}  # fmt: skip
        if pr:
            github["event"] = {"pull_request": {"number": pr}}
        else:
            github["ref_name"] = "main"
        variables = {"VERIFIER_MODEL": MODEL, "OPENAI_BASE_URL": self.server.base_url, "VERIFIER_ANCHOR": anchor,
                     "VBENCH_INSTALL": "verifier-bench"}  # fmt: skip
        return {"github": github, "vars": variables, "secrets": {"OPENAI_API_KEY": "sk-local-test"}}

    def run(self, job: str, ref: str, contexts: dict[str, Any]) -> JobRun:
        self.jobs += 1
        env = github_env(self.api.url, TOKEN)
        env["PATH"] = f"{self.bin}{os.pathsep}{env['PATH']}"
        env["PYTHONPATH"] = str(ROOT)
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = "runner"
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = "runner@example.org"
        workdir = self.tmp / f"job-{self.jobs:03d}"
        workdir.mkdir()
        return run_job(self.workflow, job, origin=self.origin, ref=ref, workdir=workdir, contexts=contexts, env=env)

    def pull_request(self, number: int, branch: str, anchor: str = "") -> JobRun:
        git(self.dev, "push", "--quiet", "--force", "origin", branch)
        sha = git(self.dev, "rev-parse", branch)
        return self.run("prompt-gate", sha, self.contexts("pull_request", sha, number, anchor))

    def push_main(self) -> JobRun:
        git(self.dev, "push", "--quiet", "origin", "main")
        sha = git(self.dev, "rev-parse", "main")
        self.main_commits.append(sha)
        return self.run("record", sha, self.contexts("push", sha, None))


def summary_of(job: JobRun) -> dict[str, Any]:
    return json.loads((job.workdir / "verifier-run" / "summary.json").read_text())


@pytest.fixture
def team(tmp_path: Path):  # type: ignore[no-untyped-def]
    model = ChainModel()
    with LocalOpenAIServer(model) as server, GitHubAPI(repo=REPO) as api:
        yield Team(tmp_path, server, model, api)


def first_pull_request(team: Team) -> JobRun:
    """PR #1 adds what `vbench init` writes (its cases replaced by the 140-case corpus) and the workflow."""
    git(team.dev, "checkout", "--quiet", "-b", "add-verifier")
    for name, text in starter_files("verifier-bench").items():
        if not name.startswith("cases/"):
            (team.dev / name).parent.mkdir(parents=True, exist_ok=True)
            (team.dev / name).write_text(text)
    write_copies(team.dev / "cases", copies=COPIES)
    write_prompt(team.dev, revision=1, drift=0)
    team.commit("add the verifier prompt, its cases and the prompt gate")
    team.workflow = load(team.dev / WORKFLOW)
    return team.pull_request(1, "add-verifier")


def test_the_first_pull_request_is_a_bootstrap_run(team: Team) -> None:
    """The base branch has no prompt: the candidate is measured alone, the comment says so, the job passes."""
    job = first_pull_request(team)
    assert job.code == 0, job.log
    assert job.steps["control"]["control"] == "none"
    assert job.steps["gate"]["decision"] == "bootstrap" and job.steps["gate"]["code"] == "0"
    assert "Comment on the pull request" in job.ran
    (comment,) = team.api.comments[1]
    assert comment["body"].startswith(f"<!-- verifier-bench prompt-gate model={MODEL} -->\n")
    assert "FIRST RUN, nothing to compare" in comment["body"].splitlines()[1]
    assert len(team.model.asked) == 7 * COPIES  # the candidate only
    assert set(job.skipped) >= {"Attach the run folder", "The response cache (per model and prompt)"}
    assert "Install verifier-bench" in job.skipped and "The history of main (read only)" in job.ran
    artifacts = os.environ.get("VBENCH_ARTIFACTS")
    if artifacts:  # the comment as it renders, for a person to read (.ci/run sets it)
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        (Path(artifacts) / "first-pr-comment.md").write_text(comment["body"])


def test_thirty_commits_history_and_an_anchor_that_stops_creep(team: Team) -> None:
    """30 commits: the bootstrap, 21 rewordings pushed to main, 8 pull requests each losing one case."""
    assert first_pull_request(team).code == 0
    git(team.dev, "checkout", "--quiet", "main")
    git(team.dev, "merge", "--quiet", "--ff-only", "add-verifier")
    first = team.push_main()
    assert first.code == 0, first.log
    # the first release: its recorded run is tagged, the anchor every later pull request is held to
    tagger = team.tmp / "tagger"
    subprocess.run(["git", "clone", "--quiet", "--branch", "vbench-history", str(team.origin), str(tagger)], check=True)
    tagged = subprocess.run(
        ["vbench", "history", "tag", "history:main", "release-1", "--history", "runs"],
        cwd=tagger, env={**os.environ, "PATH": f"{team.bin}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True,
    )  # fmt: skip
    assert tagged.returncode == 0, tagged.stderr
    git(tagger, "add", "-A")
    git(tagger, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "--quiet", "-m", "tag release-1")
    git(tagger, "push", "--quiet", "origin", "vbench-history")

    for revision in range(2, 23):  # 21 rewordings straight to main: each measured and recorded
        write_prompt(team.dev, revision=revision, drift=0)
        team.commit(f"reword the prompt ({revision})")
        job = team.push_main()
        assert job.code == 0, job.log

    drift, first_held, red, chain = 0, None, None, []
    for step in range(1, 9):  # 8 pull requests, each losing one more case than main
        drift += 1
        branch = f"tighten-{step}"
        git(team.dev, "checkout", "--quiet", "-b", branch, "main")
        write_prompt(team.dev, revision=22 + step, drift=drift)
        team.commit(f"tighten the prompt ({step})")
        asked_before = len(team.model.asked)
        job = team.pull_request(100 + step, branch)
        assert job.code == 0, job.log
        assert job.steps["control"]["control"] == "history:main"  # main's recorded run, not re-run
        asked = team.model.asked[asked_before:]
        assert len(asked) == 7 * COPIES and {n for _, n in asked} == {drift}  # no request for the control's prompt
        (decision,) = summary_of(job)["decisions"]
        assert decision["decision"] == "ship", decision["reasons"]  # the base comparison alone ships every step
        lost = drift / (7 * COPIES) * 100
        chain.append({"step": step, "lost_pp": round(lost, 2), "against_main": "ship"})
        if red is None:  # the same pull request with the anchor, until the anchor turns the job red
            anchored = team.pull_request(100 + step, branch, anchor="history:release-1")
            (held,) = summary_of(anchored)["decisions"]
            chain[-1] |= {"with_anchor": held["decision"], "decided_by": held.get("decided_by"), "exit": anchored.code}
            if held["decision"] != "ship" and first_held is None:
                first_held = lost
                assert held["decided_by"] == "anchor" and held["control_decision"] == "ship"
                (comment,) = team.api.comments[100 + step]  # the one comment of this model, edited
                assert "against the anchor" in comment["body"] and "SHIP" not in comment["body"].splitlines()[1]
            if anchored.code != 0:
                red = lost
                assert held["decision"] == "block" and held["decided_by"] == "anchor" and anchored.code == 1
        git(team.dev, "checkout", "--quiet", "main")
        git(team.dev, "merge", "--quiet", "--ff-only", branch)
        assert team.push_main().code == 0

    artifacts = os.environ.get("VBENCH_ARTIFACTS")
    if artifacts:  # the chain step by step, for the record
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        (Path(artifacts) / "creep-chain.json").write_text(json.dumps(chain, indent=1))
    assert drift / (7 * COPIES) * 100 > 5  # the chain, shipped step by step against main, lost more than the margin
    assert first_held is not None and first_held <= 5  # with the anchor it stops shipping well before
    assert red is not None and red <= 5  # and the job goes red (blocked) before the loss passes the margin
    assert len(team.main_commits) == 30
    history = team.tmp / "history"
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", "vbench-history", str(team.origin), str(history)], check=True
    )
    listed = subprocess.run(
        ["vbench", "history", "list", "--history", "runs"], cwd=history, capture_output=True, text=True,
        env={**os.environ, "PATH": f"{team.bin}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert all(sha[:7] in listed.stdout for sha in team.main_commits)  # every main-branch run is recorded
