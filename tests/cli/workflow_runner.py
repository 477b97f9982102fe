"""Run a GitHub Actions job's own `run:` steps on this machine, as a runner would, for the workflow tests.

The job runs in a fresh clone of the repository at the event's commit, under bash with GitHub's flags
(`--noprofile --norc -eo pipefail`), with the variables a runner sets (RUNNER_TEMP, GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY, GITHUB_EVENT_PATH, ...) and each step's `env:` evaluated from the contexts given. The
`${{ }}` expressions the workflow uses are evaluated by a small evaluator of that subset (context paths, string
literals, `||`, `&&`, `==`, `!=`, `always()`); anything else raises, so a workflow that grows a new kind of
expression fails here rather than being run wrong. `uses:` steps are not run (checkout is the clone;
setup-python, the cache and the artifact upload have no local part) and are listed in `skipped`.
`vbench` on PATH is the code under test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
TOKEN = re.compile(r"\s*(?:(\|\||&&|==|!=|\(|\))|'((?:[^']|'')*)'|([A-Za-z_][\w.-]*(?:\(\))?))")


def evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    """One expression of the subset the workflows use, against the contexts in `ctx`."""
    tokens: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(expr):
        match = TOKEN.match(expr, pos)
        if not match or match.end() == pos:
            raise ValueError(f"unsupported expression: {expr!r} at {expr[pos:]!r}")
        op, literal, name = match.groups()
        if op:
            tokens.append(("op", op))
        elif literal is not None:
            tokens.append(("value", literal.replace("''", "'")))
        elif name == "always()":
            tokens.append(("value", True))
        else:
            tokens.append(("value", lookup(name, ctx)))
        pos = match.end()
    value, rest = _or(tokens)
    if rest:
        raise ValueError(f"unsupported expression: {expr!r}")
    return value


def _or(tokens: list[tuple[str, Any]]) -> tuple[Any, list[tuple[str, Any]]]:
    left, rest = _and(tokens)
    while rest and rest[0] == ("op", "||"):
        right, rest = _and(rest[1:])
        left = left or right
    return left, rest


def _and(tokens: list[tuple[str, Any]]) -> tuple[Any, list[tuple[str, Any]]]:
    left, rest = _cmp(tokens)
    while rest and rest[0] == ("op", "&&"):
        right, rest = _cmp(rest[1:])
        left = left and right
    return left, rest


def _cmp(tokens: list[tuple[str, Any]]) -> tuple[Any, list[tuple[str, Any]]]:
    kind, value = tokens[0]
    if (kind, value) == ("op", "("):
        value, rest = _or(tokens[1:])
        rest = rest[1:]
    elif kind == "value":
        rest = tokens[1:]
    else:
        raise ValueError(f"unexpected {value!r}")
    if rest and rest[0][0] == "op" and rest[0][1] in ("==", "!="):
        other, rest2 = _cmp(rest[1:])
        same = str(value if value is not None else "") == str(other if other is not None else "")
        return (same if rest[0][1] == "==" else not same), rest2
    return value, rest


def lookup(path: str, ctx: dict[str, Any]) -> Any:
    """`github.event.pull_request.number`, `steps.gate.outputs.code`, `vars.X`: a missing leaf is ''."""
    value: Any = ctx
    for part in path.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return value


def substitute(text: str, ctx: dict[str, Any]) -> str:
    return EXPR.sub(lambda m: str(evaluate(m.group(1), ctx)), text)


@dataclass
class JobRun:
    code: int
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    """Step id -> its outputs."""
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    log: str = ""
    workdir: Path = Path()


def vbench_shim(folder: Path) -> Path:
    """A `vbench` on PATH that runs this checkout's code."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "vbench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m harness.cli "$@"\n')
    shim.chmod(0o755)
    return folder


def run_job(
    workflow: dict[str, Any],
    job_name: str,
    *,
    origin: Path,
    ref: str,
    workdir: Path,
    contexts: dict[str, Any],
    env: dict[str, str],
    not_run: tuple[str, ...] = ("Install verifier-bench",),
) -> JobRun:
    """Clone `origin` at `ref` into `workdir` and run the job's steps there; the job's exit code and outputs.

    The steps named in `not_run` are listed as skipped: by default the install (the code under test is already
    on PATH as `vbench`; installing a package by name here would reach for an index)."""
    job = workflow["jobs"][job_name]
    subprocess.run(["git", "clone", "--quiet", str(origin), str(workdir / "repo")], check=True)
    repo = workdir / "repo"
    branch = contexts["github"].get(
        "ref_name"
    )  # actions/checkout: a push checks out its branch, a PR a detached commit
    checkout = ["checkout", "--quiet", "-B", branch, ref] if branch else ["checkout", "--quiet", ref]
    subprocess.run(["git", "-C", str(repo), *checkout], check=True)
    temp = workdir / "runner-temp"
    temp.mkdir()
    event = workdir / "event.json"
    event.write_text(json.dumps(contexts["github"].get("event", {})))
    ctx = {**contexts, "env": dict(workflow.get("env") or {}), "steps": {}, "runner": {"temp": str(temp)}}
    ctx["matrix"] = {key: substitute(str(values[0]), ctx) for key, values in job["strategy"]["matrix"].items()}
    ctx["strategy"] = {"job-index": 0}
    base_env = {
        **env,
        **{k: str(v) for k, v in ctx["env"].items()},
        "RUNNER_TEMP": str(temp),
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": contexts["github"]["event_name"],
        "GITHUB_REPOSITORY": contexts["github"]["repository"],
        "GITHUB_STEP_SUMMARY": str(workdir / "step-summary.md"),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
    }
    result = JobRun(code=0, workdir=repo)
    failed = False
    for index, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or str(index)
        condition = step.get("if")  # without a status function GitHub reads `success() && (condition)`
        should = (not failed or "always()" in (condition or "")) and (not condition or bool(evaluate(condition, ctx)))
        if not should:
            continue
        if "uses" in step or name in not_run:
            result.skipped.append(name)
            continue
        output = workdir / f"output-{index}"
        output.write_text("")
        step_env = {**base_env, "GITHUB_OUTPUT": str(output)}
        step_env.update({k: str(substitute(str(v), ctx)) for k, v in (step.get("env") or {}).items()})
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=repo,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        result.ran.append(name)
        result.log += f"--- {name} (exit {done.returncode})\n{done.stdout}{done.stderr}"
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        if step.get("id"):
            ctx["steps"][step["id"]] = {"outputs": outputs, "outcome": "success" if done.returncode == 0 else "failure"}
            result.steps[step["id"]] = outputs
        if done.returncode != 0 and not step.get("continue-on-error"):
            failed = True
            result.code = done.returncode
    return result


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def github_env(api_url: str, token: str) -> dict[str, str]:
    """The process environment of a job: this machine's, without any real GitHub or OpenAI settings."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "OPENAI_", "GH_", "RUNNER_"))}
    return {**keep, "GITHUB_API_URL": api_url, "GITHUB_TOKEN": token}
