"""The bench's headline (issue 14, item 8): what a user waits for, as whole processes.

`vbench run` exactly as the README has a user run it against an OpenAI-compatible endpoint
(`OPENAI_BASE_URL=... OPENAI_API_KEY=... vbench run --model openai:<m> --cases DIR --concurrency C
--out DIR`, a fresh cache folder as on a first run): start-up, the run, scoring, the summary and the
HTML report. Against it, a raw-client process (`bench/raw_client.py`: `AsyncOpenAI`
`chat.completions.create`, a semaphore of C) that sends the very requests that run sent, captured
by the threaded server from an untimed warm-up `vbench run` on the same cases. Both on the same
server, in alternating order, several times; each timed from outside, wall time and the user+sys CPU
the kernel charged to the process. Done once on each server: the project's async local server and a
plain threaded stdlib server.

The start-up rows (issue 14, item 7) are whole processes too: `vbench --version` and
`vbench cases validate ONE_FILE`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.procs import ROOT, ServerKind, ServerProcess, timed_process

MODEL = "openai:local-model"
RAW_CLIENT = Path(__file__).resolve().parent / "raw_client.py"


def vbench_path() -> str:
    """The `vbench` script of this interpreter's environment (what a user's shell finds after `pip install`)."""
    return shutil.which("vbench", path=str(Path(sys.executable).parent)) or shutil.which("vbench") or "vbench"


def user_env(url: str) -> dict[str, str]:
    """The environment the README has a user set for an OpenAI-compatible endpoint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return env | {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "no-key"}


def vbench_command(cases: Path, out: Path, cache: Path, concurrency: int) -> list[str]:
    """`vbench run` as the README writes it, with a cache folder of its own (every timed run starts cold)."""
    run = [vbench_path(), "run", "--model", MODEL, "--cases", str(cases), "--concurrency", str(concurrency)]
    return [*run, "--out", str(out), "--cache", str(cache)]


def raw_command(url: str, bodies: Path, concurrency: int, transport: str) -> list[str]:
    """The raw client as a script (it imports nothing of the project)."""
    cmd = [sys.executable, str(RAW_CLIENT), "--url", url, "--bodies", str(bodies)]
    return [*cmd, "--concurrency", str(concurrency), "--transport", transport]


def run_vbench(work: Path, url: str, concurrency: int, name: str, keep: bool = False) -> dict[str, Any]:
    """One whole `vbench run` into `work/name`; the folder is removed afterwards unless `keep`."""
    out, cache = work / name, work / f"{name}-cache"
    for folder in (out, cache):
        shutil.rmtree(folder, ignore_errors=True)
    result = timed_process(vbench_command(work / "cases", out, cache, concurrency), env=user_env(url), cwd=work)
    if result["returncode"] not in (0, 1):  # 1: a gate failed, which is not the bench's concern
        result["error"] = f"vbench run exited {result['returncode']}: {result['output'][-500:]}"
    else:
        from harness.score.summary_model import read_summary_or_none

        summary = read_summary_or_none(out)
        variant = summary.variants[0] if summary is not None and summary.variants else None
        result |= {"results": summary.results if summary else None, "report": (out / "report.html").exists()}
        result |= {
            "failures": variant.errors if variant else 0,
            "summary_harness_cpu_ms": variant.harness_cpu_ms if variant else None,
        }
    result.pop("output")
    shutil.rmtree(cache, ignore_errors=True)
    if keep:
        result["run_dir"] = str(out)
    else:
        shutil.rmtree(out, ignore_errors=True)
    return result


def run_raw(url: str, bodies: Path, concurrency: int, transport: str) -> dict[str, Any]:
    result = timed_process(raw_command(url, bodies, concurrency, transport), env=user_env(url))
    lines = [line for line in result.pop("output").splitlines() if line.startswith("{")]
    if result["returncode"] != 0 or not lines:
        result["error"] = f"raw client exited {result['returncode']}"
    else:
        result |= json.loads(lines[-1])
    return result


def capture_requests(work: Path, latency_ms: float, concurrency: int) -> tuple[Path, dict[str, Any]]:
    """The warm-up: one untimed-for-the-headline `vbench run` on the threaded server, which writes every request
    body it receives to `work/requests.jsonl`; the raw client then sends exactly those. The run folder is kept
    (the report section builds its synthetic run folders from it)."""
    capture = work / "requests.jsonl"
    capture.unlink(missing_ok=True)
    with ServerProcess(latency_ms, "threaded", capture=capture) as server:
        warm = run_vbench(work, server.url, concurrency, "whole-warmup", keep=True)
    return capture, warm


def measure_server(
    kind: ServerKind,
    work: Path,
    bodies: Path,
    latency_ms: float,
    concurrency: int,
    reps: int,
    transports: list[str],
    log: Any,
) -> dict[str, Any]:
    """vbench and each raw transport `reps` times on one server process, the order rotating every repetition."""
    kinds = ["vbench", *(f"raw-{t}" for t in transports)]
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    with ServerProcess(latency_ms, kind) as server:
        for rep in range(reps):
            for name in kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]:
                if name == "vbench":
                    result = run_vbench(work, server.url, concurrency, f"whole-{kind}")
                else:
                    result = run_raw(server.url, bodies, concurrency, name.removeprefix("raw-"))
                runs[name].append(result)
                brief = result.get("error") or f"{result['wall_s']:.2f} s wall, {result['cpu_s']:.2f} s cpu"
                log(f"{kind} server, {latency_ms:g} ms, rep {rep + 1}: {name}: {brief}")
    return {"server": kind, "latency_ms": latency_ms, "kinds": {k: summarise(v) for k, v in runs.items()}}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the good runs (wall, CPU, user, sys, peak RSS), and every run's wall and CPU."""
    good = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {"runs": runs, "reps": len(good)}
    if not good:
        out["error"] = runs[0].get("error", "not run") if runs else "not run"
        return out
    for key in ("wall_s", "cpu_s", "user_s", "sys_s", "peak_rss_mib"):
        out[key] = statistics.median(r[key] for r in good)
    out["wall_s_all"] = [round(r["wall_s"], 3) for r in good]
    out["cpu_s_all"] = [round(r["cpu_s"], 3) for r in good]
    out["failures"] = sum(r.get("failures", 0) for r in good)
    return out


def ratios(row: dict[str, Any]) -> dict[str, Any]:
    """vbench over each raw transport: ratio of median walls, median of paired (same repetition) ratios, CPU."""
    kinds, out = row["kinds"], {}
    vbench = kinds.get("vbench", {})
    for name, raw in kinds.items():
        if name == "vbench" or "wall_s" not in raw or "wall_s" not in vbench:
            continue
        paired = [v / r for v, r in zip(vbench["wall_s_all"], raw["wall_s_all"], strict=False)]
        out[f"vbench/{name}"] = vbench["wall_s"] / raw["wall_s"]
        out[f"vbench/{name}_paired"] = statistics.median(paired)
        out[f"vbench/{name}_cpu"] = vbench["cpu_s"] / raw["cpu_s"]
    return out


def startup(work: Path, one_file: Path, reps: int) -> dict[str, Any]:
    """`vbench --version` and `vbench cases validate ONE_FILE`, `reps` whole processes each, alternating."""
    commands = {
        "version": [vbench_path(), "--version"],
        "validate_one_file": [vbench_path(), "cases", "validate", str(one_file)],
    }
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in commands}
    for _ in range(reps):
        for name, cmd in commands.items():
            result = timed_process(cmd, cwd=work)
            output = result.pop("output")
            if result["returncode"] != 0:
                result["error"] = f"exited {result['returncode']}: {output[-300:]}"
            runs[name].append(result)
    shown = {"version": "vbench --version", "validate_one_file": "vbench cases validate ONE_FILE"}
    return {name: summarise(runs[name]) | {"command": shown[name]} for name in commands}


def slow_headline(work: Path, bodies: Path, latency_ms: float, concurrency: int, reps: int, log: Any) -> dict[str, Any]:
    """The headline at a real judge's latency (seconds a reply): the same captured requests (a request body does
    not depend on the server's latency), the async server and the raw client's own transport only."""
    if not bodies.exists():
        return {"error": "no captured requests (the headline's warm-up failed)"}
    row = measure_server("async", work, bodies, latency_ms, concurrency, reps, ["httpx"], log)
    row["ratios"] = ratios(row)
    return row


def report_time(run_dir: Path, reps: int) -> dict[str, Any]:
    """`vbench report RUN_DIR` of the headline's 1,000-case run as a user re-renders it: whole processes
    (`bench.report_time.report_once`), median of `reps` after one untimed run that compiles the templates."""
    from bench.report_time import report_once

    if not (run_dir / "results.jsonl").exists():
        return {"error": "no run folder to report on (the headline's warm-up failed)"}
    out = run_dir.parent / "report-time"
    runs: list[dict[str, Any]] = []
    try:
        report_once(ROOT, run_dir, out)
        runs += [report_once(ROOT, run_dir, out) | {"failures": 0} for _ in range(reps)]
    except RuntimeError as exc:
        runs.append({"error": str(exc)})
    shutil.rmtree(out, ignore_errors=True)
    results = sum(1 for line in (run_dir / "results.jsonl").open(encoding="utf-8") if line.strip())
    return summarise(runs) | {"results": results}


def headline(
    work: Path, latency_ms: float, concurrency: int, reps: int, servers: list[str], transports: list[str], log: Any
) -> dict[str, Any]:
    """Capture the harness's requests, then each server in turn; figures for the JSON (`whole`)."""
    bodies, warm = capture_requests(work, latency_ms, concurrency)
    sent = sum(1 for line in bodies.open(encoding="utf-8") if line.strip()) if bodies.exists() else 0
    brief = warm.get("error") or f"{warm['wall_s']:.2f} s"
    log(f"warm-up vbench run: {brief}; {sent} requests captured")
    out: dict[str, Any] = {"warmup": warm, "captured_requests": sent, "rows": [], "bodies": str(bodies)}
    if "error" in warm or not sent:
        out["error"] = warm.get("error") or "the warm-up run sent no request"
        return out
    for kind in servers:
        row = measure_server(kind, work, bodies, latency_ms, concurrency, reps, transports, log)  # type: ignore[arg-type]
        row["ratios"] = ratios(row)
        out["rows"].append(row)
    return out


def phase_profile(work: Path, latency_ms: float, concurrency: int, kind: ServerKind = "async") -> dict[str, Any]:
    """One more whole `vbench run`, in `bench.phases`: the CPU and wall seconds of each of its phases."""
    out, cache = work / "whole-phases", work / "whole-phases-cache"
    for folder in (out, cache):
        shutil.rmtree(folder, ignore_errors=True)
    with ServerProcess(latency_ms, kind) as server:
        cmd = [sys.executable, "-m", "bench.phases", *vbench_command(work / "cases", out, cache, concurrency)[1:]]
        result = timed_process(cmd, env=user_env(server.url))
    for folder in (out, cache):
        shutil.rmtree(folder, ignore_errors=True)
    lines = [line for line in result.pop("output").splitlines() if line.startswith("{")]
    if result["returncode"] != 0 or not lines:
        return {"error": f"bench.phases exited {result['returncode']}"}
    return json.loads(lines[-1]) | {"server": kind, "latency_ms": latency_ms, "process_cpu_s": result["cpu_s"]}


def cli_figures(whole: dict[str, Any]) -> dict[str, Any]:
    """The whole `vbench run` on the async server (where the peers run), as the peers' rows compare against."""
    warm = whole.get("warmup") or {}
    row = next((r for r in whole.get("rows", []) if r["server"] == "async"), None)
    vbench = (row or {}).get("kinds", {}).get("vbench", {})
    if "wall_s" not in vbench:
        return {"error": vbench.get("error") or whole.get("error") or "not run", "run_dir": warm.get("run_dir", "")}
    return {
        "wall_s": vbench["wall_s"],
        "latency_ms": row["latency_ms"] if row else None,
        "run_dir": warm.get("run_dir", ""),
        "summary_harness_cpu_ms": warm.get("summary_harness_cpu_ms"),
    }
