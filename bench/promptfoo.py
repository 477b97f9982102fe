"""(p) promptfoo, the second peer: its OpenAI provider on the exact requests the harness sends, a whole process.

promptfoo is an npm package; `nox -s bench` installs a pinned version into a cache folder
(`PROMPTFOO_DIR`, default ~/.cache/verifier-bench/promptfoo) with npm, the only network it needs. Each
measurement writes a config whose provider (`openai:chat:local-model`) points at the bench's local server
with the harness's sampling settings and response format, one test per request (its messages passed through
a prompt function, so no template touches them), and times `promptfoo eval -j <concurrency>` from outside,
Node's start-up included. No cache, no database write, no telemetry, no update check, no sharing.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

PROMPTFOO_VERSION = "0.121.20"
"""The newest release whose engines accept Node 20.20 (0.122+ needs Node 22.22)."""
PROMPTFOO_DIR = Path(os.environ.get("VBENCH_PROMPTFOO_DIR", Path.home() / ".cache" / "verifier-bench" / "promptfoo"))
RESPONSE_FORMAT = "response_format.json"
PROMPT_JS = "module.exports = ({ vars }) => vars.messages;\n"
QUIET_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_SELF_HOSTED": "1",
    "PROMPTFOO_CACHE_ENABLED": "false",
    "PROMPTFOO_DISABLE_WAL_MODE": "1",
    "NO_COLOR": "1",
}


def binary(folder: Path = PROMPTFOO_DIR) -> Path:
    return folder / "node_modules" / ".bin" / "promptfoo"


def install(folder: Path = PROMPTFOO_DIR, version: str = PROMPTFOO_VERSION) -> str | None:
    """npm install promptfoo@version into `folder` unless it is there; None, or why it could not be."""
    if binary(folder).exists() and installed_version(folder) == version:
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed (promptfoo is an npm package)"
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(folder)]
    done = subprocess.run([*cmd, f"promptfoo@{version}"], capture_output=True, text=True, check=False, timeout=1200)
    if done.returncode != 0 or not binary(folder).exists():
        return f"npm install promptfoo@{version} failed ({done.returncode}): {done.stderr.strip()[-400:]}"
    return None


def installed_version(folder: Path = PROMPTFOO_DIR) -> str | None:
    package = folder / "node_modules" / "promptfoo" / "package.json"
    try:
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def write_config(requests: list[dict[str, Any]], params: dict[str, Any], url: str, folder: Path) -> Path:
    """promptfooconfig.yaml (JSON, which YAML reads), the prompt function and the response format, in `folder`.

    The response format is a file of its own: promptfoo resolves every `$ref` of its config against the config
    (EMISSINGPOINTER for the schema's `#/$defs/...`), but sends a `file://` response format as it is.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prompt.js").write_text(PROMPT_JS, encoding="utf-8")
    sampling = {k: params[k] for k in ("temperature", "max_tokens", "seed") if k in params}
    if "response_format" in params:
        (folder / RESPONSE_FORMAT).write_text(json.dumps(params["response_format"]), encoding="utf-8")
        sampling["response_format"] = f"file://{RESPONSE_FORMAT}"
    config = {
        "description": "verifier-bench peer: the harness's requests through promptfoo's OpenAI provider",
        "prompts": ["file://prompt.js"],
        "providers": [
            {"id": f"openai:chat:{params['model']}", "config": {"apiBaseUrl": url, "apiKey": "no-key", **sampling}}
        ],
        "tests": [{"vars": {"messages": r["messages"]}} for r in requests],
        "sharing": False,
    }
    path = folder / "promptfooconfig.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def run_eval(config: Path, concurrency: int, out: Path) -> dict[str, Any]:
    """`promptfoo eval` as one timed process: wall and CPU (user + system of the whole process tree)."""
    exe = binary()
    if not exe.exists():
        return {"error": f"promptfoo is not installed at {exe}; run the bench through `nox -s bench`"}
    env = {**os.environ, **QUIET_ENV, "PROMPTFOO_CONFIG_DIR": str(config.parent / ".promptfoo")}
    cmd = [str(exe), "eval", "-c", str(config), "-j", str(concurrency), "--no-cache", "--no-write"]
    cmd += ["--no-progress-bar", "--no-table", "--max-concurrency", str(concurrency), "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=config.parent, env=env, check=False, timeout=1800)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not out.exists():
        tail = (done.stderr or done.stdout).strip()[-500:]
        return {"error": f"promptfoo eval exited {done.returncode} without results: {tail}"}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "exit_code": done.returncode, **count_failures(out)}


def count_failures(out: Path) -> dict[str, Any]:
    """Results, and those without a reply (a provider error, or no output)."""
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = (data.get("results") or {}).get("results") or []
    failed = sum(1 for r in rows if r.get("error") or not (r.get("response") or {}).get("output"))
    return {"results": len(rows), "failures": failed}


def main() -> int:
    """`python -m bench.promptfoo install`: what `nox -s bench` runs first; a failure is reported, not fatal
    (the bench then records promptfoo as not measured, with this reason)."""
    problem = install()
    print(f"promptfoo {PROMPTFOO_VERSION}: " + (problem or f"installed at {binary()}"), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
