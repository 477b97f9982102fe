"""The CI files a team copies, read as a GitHub Actions (or GitLab) reviewer would: actionlint, zizmor,
shellcheck on every `run:` script, and the SchemaStore schemas. The starter workflow is checked as `vbench init`
writes it (with an install line, and without one); the action through its metadata and its documented snippet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.cli.init import starter_files
from tests.cli.workflow_tools import actionlint, run_scripts, schema_errors, shellcheck, zizmor

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ".github/workflows/verifier.yml"


def written(tmp_path: Path, requirement: str | None) -> Path:
    path = tmp_path / WORKFLOW
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(starter_files(requirement)[WORKFLOW], encoding="utf-8")
    return path


@pytest.mark.parametrize("requirement", ["verifier-bench==0.1.0", None])
def test_the_starter_workflow_passes_every_linter(tmp_path: Path, requirement: str | None) -> None:
    path = written(tmp_path, requirement)
    assert actionlint(path) == []
    assert zizmor(path) == []
    assert schema_errors("github-workflows", path) == ""
    assert [f for name, script in run_scripts(path).items() for f in shellcheck(script, name)] == []


def test_the_starter_workflow_has_what_a_reviewer_asks_for(tmp_path: Path) -> None:
    workflow = yaml.safe_load(written(tmp_path, "verifier-bench==0.1.0").read_text())
    gate, record = workflow["jobs"]["prompt-gate"], workflow["jobs"]["record"]
    assert workflow["permissions"] == {} and gate["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert record["permissions"] == {"contents": "write"}
    steps = {s.get("name") or s["uses"].split("@")[0]: s for s in gate["steps"]}
    assert steps["Comment on the pull request"]["continue-on-error"] is True
    assert steps["Comment on the pull request"]["env"]["GH_REPO"] == "${{ github.repository }}"
    assert "--edit-last" not in yaml.safe_dump(workflow)
    assert steps["Attach the run folder"]["with"]["name"].endswith("${{ strategy.job-index }}")
    cache = steps["The response cache (per model and prompt)"]
    assert cache["uses"].startswith("actions/cache@") and cache["with"]["path"] == ".cache/responses"
    assert "matrix.model" in cache["with"]["key"] and "hashFiles('prompts/**'" in cache["with"]["key"]
    assert steps["Python"]["with"]["python-version"] == "3.11"
    assert all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", s["uses"]) for s in gate["steps"] if "uses" in s)
    assert "--history" in steps["Prompt gate"]["run"]
    assert "--history" in next(s["run"] for s in record["steps"] if s.get("name") == "Measure main and record it")


def snippet_workflow(tmp_path: Path) -> Path:
    """The usage documented at the top of action.yml, as the workflow a user pastes it into."""
    header = (ROOT / "action.yml").read_text(encoding="utf-8").split("\n\n", 1)[0].splitlines()
    start = next(i for i, line in enumerate(header) if line.strip() == "#")
    end = next(i for i in range(start + 1, len(header)) if header[i].strip() == "#")
    snippet = "\n".join(line[2:] for line in header[start + 1 : end]).replace("OWNER/verifier-bench@REF", "./")
    text = "name: gate\non: pull_request\njobs:\n  gate:\n    runs-on: ubuntu-latest\n"
    path = tmp_path / ".github/workflows/snippet.yml"
    path.parent.mkdir(parents=True)
    path.write_text(text + "\n".join("    " + line[2:] for line in snippet.splitlines()) + "\n")
    return path


def test_the_action_passes_every_linter_and_its_snippet_asks_for_write_access(tmp_path: Path) -> None:
    action = ROOT / "action.yml"
    assert zizmor(action) == []
    assert schema_errors("github-actions", action) == ""
    assert [f for name, script in run_scripts(action).items() for f in shellcheck(script, name)] == []
    snippet = snippet_workflow(tmp_path)
    assert actionlint(snippet) == [] and schema_errors("github-workflows", snippet) == ""
    job = yaml.safe_load(snippet.read_text())["jobs"]["gate"]
    assert job["permissions"]["pull-requests"] == "write" and job["steps"][0]["with"]["mode"] == "prompt-gate"
    steps = {s.get("id"): s for s in yaml.safe_load(action.read_text())["runs"]["steps"]}
    assert steps["comment"]["continue-on-error"] is True and "GH_REPO" in steps["comment"]["env"]
    assert "strategy.job-index" in yaml.safe_load(action.read_text())["runs"]["steps"][3]["with"]["name"]


def gitlab_scripts(recipe: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {
        f"{job}/{key}": "\n".join(spec[key])
        for job, spec in recipe.items()
        if isinstance(spec, dict)
        for key in ("before_script", "script", "after_script")
        if key in spec
    }


def test_the_gitlab_recipe_is_valid_gitlab_ci_with_sound_scripts() -> None:
    path = ROOT / "ci/gitlab-ci.yml"
    assert schema_errors("gitlab-ci", path) == ""
    recipe = yaml.safe_load(path.read_text(encoding="utf-8"))
    keywords = {"variables", "include", "stages", "default", "workflow"}
    jobs = {
        n: spec for n, spec in recipe.items() if isinstance(spec, dict) and not n.startswith(".") and n not in keywords
    }
    assert set(jobs) == {"verifier-prompt-gate", "verifier-certify"}
    for spec in jobs.values():
        assert spec["extends"] in recipe  # the template each job extends is there
    scripts = gitlab_scripts(recipe)
    assert [f for name, script in scripts.items() for f in shellcheck(script, name)] == []
    out = recipe[".verifier-bench"]["artifacts"]["paths"][0].rstrip("/")
    assert all(f"--out {out}" in jobs[j]["script"][-1] for j in jobs)  # the artifact is the run folder written
    assert '--control-prompt "$control"' in scripts["verifier-prompt-gate/script"]  # bootstrap-aware


def test_the_linters_find_a_planted_fault(tmp_path: Path) -> None:
    """Each check fails on a file broken the way it guards against (a linter that reads nothing passes all)."""
    path = written(tmp_path, "verifier-bench==0.1.0")
    text = path.read_text()
    path.write_text(text.replace('run: exit "${CODE:-2}"', "run: echo ${{ github.event.pull_request.title }}", 1))
    assert any("template-injection" in f for f in zizmor(path))
    path.write_text(text.replace("timeout-minutes: 60", "timeout-minutes: sixty", 1))
    assert actionlint(path) and schema_errors("github-workflows", path)
    assert shellcheck('cd $RUNNER_TEMP\nrm -rf "$X"/*', "planted")
    bad = tmp_path / "gitlab-ci.yml"
    bad.write_text((ROOT / "ci/gitlab-ci.yml").read_text().replace("extends: .verifier-bench", "extends: 7", 1))
    assert schema_errors("gitlab-ci", bad)
