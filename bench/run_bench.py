"""`nox -s bench`: what a user waits for (issue 14, item 8), then the harness's overhead piece by piece (issue 7).

The headline is whole processes (bench.whole): `vbench run` as the README has a user run it (start-up,
run, scoring, summary, HTML report) against a raw `AsyncOpenAI` script sending the very requests that
run sent, on the same server, alternating, on the project's async server and on a plain threaded stdlib
server; and the start-up of `vbench --version` and `vbench cases validate ONE_FILE`.

Then, per latency, in fresh processes, interleaved per repetition (the order rotates, so load drift hits
every kind alike): (a) the raw AsyncOpenAI client on the exact request bodies the harness sends, (a*) the
same on openai's aiohttp transport (the harness's), (a') the harness's client path with nothing around
it, (b) `run_study`, (d) Inspect AI's OpenAI provider, (p) promptfoo's (a whole `promptfoo eval`
process); a cold, a warm and a warm --no-replay cached run, the stage-by-stage CPU per case, the offline
reference verifier over `cases/`, and scoring plus report rendering of 10k and 100k synthetic results.
Writes reports/bench/<date>.json and .md and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.data import request_bodies, synth_cases, synth_run, write_case_lines
from bench.procs import ROOT, ServerProcess, host, run_worker, write_figures, yardstick
from bench.table import build_targets, markdown
from bench.whole import cli_figures, headline, phase_profile, report_time, slow_headline, startup
from bench.workers import SUITE_KINDS

PACKAGES = ("verifier-bench", "openai", "httpx", "httpx2", "aiohttp", "pydantic", "sqlalchemy", "jinja2")
PACKAGES += ("inspect-ai", "pyinstrument", "pandas")
PARTS = (
    "whole",
    "slow",
    "phases",
    "startup",
    "report_time",
    "suite",
    "warm",
    "stages",
    "profile",
    "reference",
    "report",
)
"""The bench's parts, in the order they run; `--parts` picks some (the headline's warm-up runs whenever one needs it)."""
PEERS = {"peer": "(d) Inspect AI", "promptfoo": "(p) promptfoo"}
"""The peers, each run `--peer-reps` times per latency after the suite, on the same server."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=1000, help="requests / cases per measurement")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latencies", default="200,50,0", help="server latencies in ms; the first is the headline")
    parser.add_argument(
        "--reps", default="5,3,3", help="repetitions of (a), (a*), (a') and (b) per latency (fewer off the headline)"
    )
    parser.add_argument(
        "--peer-reps", default="5,1,1", help="repetitions of (d) per latency (the target is the median of 5)"
    )
    parser.add_argument("--whole-reps", type=int, default=5, help="repetitions of the whole-process headline")
    parser.add_argument("--servers", default="async,threaded", help="servers of the headline: async, threaded")
    parser.add_argument(
        "--raw-transports", default="httpx,aiohttp", help="the raw script's transports (httpx: the client's own)"
    )
    parser.add_argument("--startup-reps", type=int, default=5, help="runs of each start-up command")
    parser.add_argument(
        "--slow-latency", type=float, default=2000.0, help="ms: the headline again at a real judge's latency (0: skip)"
    )
    parser.add_argument("--slow-reps", type=int, default=3, help="repetitions of the slow-latency headline")
    parser.add_argument("--report-reps", type=int, default=5, help="runs of `vbench report` on the 1,000-case run")
    parser.add_argument(
        "--parts",
        default="all",
        help="comma-separated parts to run (all, or: whole, slow, phases, startup, report_time, suite, warm, "
        "stages, profile, reference, report): the targets of the parts left out read 'not measured'",
    )
    parser.add_argument("--render-sizes", default="10000,100000")
    parser.add_argument("--corpus", type=Path, default=ROOT / "cases", help="corpus for (e)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (tests): n=24, one rep, small report")
    parser.add_argument("--keep-work", action="store_true", help="keep the temporary work folder")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.reps, args.peer_reps, args.latencies = min(args.n, 24), "1", "1,0", "20,0"
        args.whole_reps, args.raw_transports, args.startup_reps = 1, "httpx", 1
        args.render_sizes = "300"
        args.slow_latency, args.slow_reps, args.report_reps = 40.0, 1, 1
        args.corpus = ROOT / "cases" / "policy"
    args.parts = set(PARTS if args.parts == "all" else (x.strip() for x in str(args.parts).split(",") if x.strip()))
    if args.parts - set(PARTS):
        parser.error(f"unknown part: {', '.join(sorted(args.parts - set(PARTS)))} (known: {', '.join(PARTS)})")
    args.latencies = [float(x) for x in str(args.latencies).split(",") if x.strip()]
    args.reps = _per_latency(args.reps, len(args.latencies))
    args.peer_reps = _per_latency(args.peer_reps, len(args.latencies))
    args.render_sizes = [int(x) for x in str(args.render_sizes).split(",") if x.strip()]
    args.servers = [x.strip() for x in str(args.servers).split(",") if x.strip()]
    args.raw_transports = [x.strip() for x in str(args.raw_transports).split(",") if x.strip()]
    unknown = set(args.servers) - {"async", "threaded"} | set(args.raw_transports) - {"httpx", "aiohttp"}
    if unknown:
        parser.error(f"unknown server or transport: {', '.join(sorted(unknown))}")
    return args


def _per_latency(spec: object, count: int) -> list[int]:
    """'5,3,3' -> [5, 3, 3]; a short list repeats its last value."""
    values = [int(x) for x in str(spec).split(",") if x.strip()] or [0]
    return (values + [values[-1]] * count)[:count]


def machine() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False)
        git = sha.stdout.strip() or None
    except OSError:
        git = None
    return {
        **host(),
        "packages": versions,
        "git_sha": git,
        "loadavg_start": os.getloadavg(),
    }


def _promptfoo_version() -> str | None:
    from bench.promptfoo import installed_version

    return installed_version()


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def measure_latency(args: argparse.Namespace, work: Path, latency: float, reps: int, peer_reps: int) -> dict[str, Any]:
    """(a), (a*), (a'), (b) `reps` times, interleaved in one process, then (d) `peer_reps` times; one server."""
    common = ["--work", str(work), "--concurrency", str(args.concurrency), "--n", str(args.n)]
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in (*SUITE_KINDS, *PEERS)}
    with ServerProcess(latency) as server:
        log(f"{latency:g} ms: (a), (a*), (a'), (b) x {reps}, interleaved")
        suite = run_worker(
            "suite",
            *("--url", server.url, *common, "--reps", str(reps), "--out", str(work / "out-suite")),
            *("--server-pid", str(server.proc.pid if server.proc else 0)),
            live=True,
        )
        for kind in SUITE_KINDS:
            runs[kind] = suite.get(kind) or [{"error": suite.get("error", "no result")}]
        for peer, name in PEERS.items():
            for rep in range(peer_reps):
                before = server.cpu_seconds()
                result = run_worker(peer, "--url", server.url, *common, "--out", str(work / f"out-{peer}"))
                result["server_cpu_s"] = server.cpu_seconds() - before
                runs[peer].append(result)
                log(f"{latency:g} ms: {name} run {rep + 1}: {_brief(result)}")
                if "error" in result:
                    break
    ideal = args.n * latency / 1000.0 / args.concurrency
    return {"latency_ms": latency, "ideal_s": ideal, "kinds": {k: summarise(v, ideal, args.n) for k, v in runs.items()}}


def _brief(result: dict[str, Any]) -> str:
    if "error" in result:
        return "ERROR " + result["error"][:300]
    return f"{result['wall_s']:.2f} s wall, {result['cpu_s']:.2f} s cpu, {result.get('failures', 0)} failures"


def summarise(runs: list[dict[str, Any]], ideal: float, n: int) -> dict[str, Any]:
    good = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {"runs": runs, "reps": len(good)}
    if not good:
        out["error"] = runs[0]["error"] if runs else "not run"
        return out
    wall = statistics.median(r["wall_s"] for r in good)
    out |= {
        "wall_s": wall,
        "wall_s_all": [round(r["wall_s"], 3) for r in good],
        "cpu_ms_per_request": 1000.0 * statistics.median(r["cpu_s"] for r in good) / n,
        "server_cpu_ms_per_request": 1000.0 * statistics.median(r["server_cpu_s"] for r in good) / n,
        "requests_per_s": n / wall,
        "efficiency": (ideal / wall) if ideal > 0 else None,
        "failures": sum(r.get("failures", 0) for r in good),
    }
    return out


def ratios(latency: dict[str, Any]) -> dict[str, Any]:
    """(b) over each other kind: ratio of medians and the median of per-repetition (paired) ratios.

    `harness/best-raw` is over the faster of the two raw clients (default transport, aiohttp): the target is
    judged against the best the raw client can do, so the harness's choice of transport cannot flatter it.
    """
    kinds = latency["kinds"]
    out: dict[str, Any] = {}
    b = kinds["harness"]
    for base in ("raw", "raw-aiohttp", "lean", *PEERS):
        a = kinds.get(base, {})
        if "wall_s" not in b or "wall_s" not in a:
            continue
        paired = [h / x for h, x in zip(b["wall_s_all"], a["wall_s_all"], strict=False)]
        out[f"harness/{base}"] = b["wall_s"] / a["wall_s"]
        out[f"harness/{base}_paired"] = statistics.median(paired)
    raws = [k for k in ("raw", "raw-aiohttp") if f"harness/{k}" in out]
    if raws:
        best = min(raws, key=lambda k: kinds[k]["wall_s"])
        out["harness/best-raw"], out["best_raw"] = out[f"harness/{best}"], best
        out["harness/best-raw_paired"] = out[f"harness/{best}_paired"]
    return out


def warm_cache(args: argparse.Namespace, work: Path, latency: float) -> dict[str, Any]:
    """(g) The same run three times against one cache, each in a fresh process: cold (empty cache), warm
    (replies and whole results replayed), and warm with --no-replay (replies cached, the system run again,
    as after a change to the harness's code)."""
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    common = ["--work", str(work), "--concurrency", str(args.concurrency), "--n", str(args.n), "--cache", str(cache)]
    with ServerProcess(latency) as server:
        cold = run_worker("harness", "--url", server.url, *common, "--out", str(work / "out-cold"))
        warm = run_worker("harness", "--url", server.url, *common, "--out", str(work / "out-warm"))
        rerun = run_worker("harness", "--url", server.url, *common, "--no-replay", "--out", str(work / "out-rerun"))
    out: dict[str, Any] = {"latency_ms": latency, "cold": cold, "warm": warm, "warm_no_replay": rerun}
    if "error" not in cold and "error" not in warm:
        out["ratio"] = warm["wall_s"] / cold["wall_s"]
        out["warm_ms_per_case"] = 1000.0 * warm["wall_s"] / args.n
    if "error" not in cold and "error" not in rerun:
        out["ratio_no_replay"] = rerun["wall_s"] / cold["wall_s"]
    return out


def profile_run(args: argparse.Namespace, work: Path, text_path: Path) -> dict[str, Any]:
    """One (b) run at 0 ms under pyinstrument (the stage figures, checked by a profiler); text profile kept."""
    with ServerProcess(0.0) as server:
        common = ["--work", str(work), "--concurrency", str(args.concurrency), "--n", str(args.n)]
        return run_worker(
            "profile", "--url", server.url, *common, "--out", str(work / "out-prof"), "--profile-text", str(text_path)
        )


def report_sizes(args: argparse.Namespace, work: Path, template: Path) -> list[dict[str, Any]]:
    """(f) Score and render synthetic run folders of each size, each in a fresh process (peak RSS is its own)."""
    rows = []
    for size in args.render_sizes:
        folder = work / f"report-{size}"
        written = synth_run(template, folder, size)
        scored = run_worker("score", "--out", str(folder))
        rendered = run_worker("render", "--out", str(folder)) if "error" not in scored else {"error": "not scored"}
        rows.append({"results": written, "score": scored, "render": rendered})
        log(f"report {written} results: score {_brief(scored)}; render {_brief(rendered)}")
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine() | {"promptfoo": _promptfoo_version()},
        "config": {
            "n": args.n,
            "concurrency": args.concurrency,
            "latencies_ms": args.latencies,
            "reps": args.reps,
            "peer_reps": args.peer_reps,
            "quick": args.quick,
            "whole_reps": args.whole_reps,
            "servers": args.servers,
            "raw_transports": args.raw_transports,
            "startup_reps": args.startup_reps,
            "slow_latency_ms": args.slow_latency,
            "slow_reps": args.slow_reps,
            "report_reps": args.report_reps,
            "parts": sorted(args.parts),
        },
    }
    work = Path(tempfile.mkdtemp(prefix="vbench-bench-"))
    profile_text: str | None = None
    try:
        log(f"work folder {work}; {args.n} cases")
        synth_cases(ROOT / "cases" / "quality", args.n, work / "cases")
        cases = write_case_lines(work / "cases", work / "cases.jsonl")
        (work / "bodies.json").write_text(json.dumps(request_bodies(cases)), encoding="utf-8")
        headline_ms = args.latencies[0]
        parts = args.parts
        if parts & {"whole", "slow", "report_time", "report"}:
            servers = args.servers if "whole" in parts else []
            log(
                f"headline: whole processes at {headline_ms:g} ms on {', '.join(servers) or 'no server'} x {args.whole_reps}"
            )
            whole = headline(work, headline_ms, args.concurrency, args.whole_reps, servers, args.raw_transports, log)
            figures["whole"], figures["cli"] = whole, cli_figures(whole)
            run_dir = Path((whole.get("warmup") or {}).get("run_dir", ""))
            if "slow" in parts and args.slow_latency > 0:
                log(f"headline at {args.slow_latency:g} ms: async server x {args.slow_reps}")
                bodies = Path(whole.get("bodies", work / "requests.jsonl"))
                figures["slow"] = slow_headline(work, bodies, args.slow_latency, args.concurrency, args.slow_reps, log)
            if "report_time" in parts:
                figures["report_time"] = report_time(run_dir, args.report_reps) | {"yardstick_s": yardstick()}
                log(f"vbench report of the {headline_ms:g} ms run: {_brief(figures['report_time'])}")
        if "phases" in parts:
            figures["phases"] = phase_profile(work, headline_ms, args.concurrency)
            log(f"phases of one whole vbench run: {figures['phases'].get('error') or 'measured'}")
        if "startup" in parts:
            one_file = sorted((work / "cases").glob("*.yaml"))[0]
            figures["startup"] = startup(work, one_file, args.startup_reps)
            log("start-up: " + ", ".join(f"{k} {v.get('wall_s', 0):.2f} s" for k, v in figures["startup"].items()))
        figures["latencies"] = []
        for latency, reps, peer_reps in zip(args.latencies, args.reps, args.peer_reps, strict=True):
            if "suite" not in parts:
                break
            row = measure_latency(args, work, latency, reps, peer_reps)
            row["ratios"] = ratios(row)
            figures["latencies"].append(row)
        if "warm" in parts:
            figures["warm_cache"] = warm_cache(args, work, headline_ms)
            log(f"warm/cold: {figures['warm_cache'].get('ratio')}")
        if "stages" in parts:
            figures["stages"] = run_worker("stages", "--work", str(work), "--n", str(args.n))
            log(f"stages: {figures['stages'].get('total_ms_per_case')} ms per case")
        if "profile" in parts:
            figures["profile"] = profile_run(args, work, work / "profile.txt")
            log(f"profile: {figures['profile'].get('self_time_share') or figures['profile'].get('error')}")
        if "reference" in parts:
            figures["reference"] = run_worker("reference", "--corpus", str(args.corpus), "--out", str(work / "out-ref"))
            log(f"reference: {_brief(figures['reference'])}")
        if "report" in parts:
            template = Path((figures.get("cli") or {}).get("run_dir", ""))
            if (template / "results.jsonl").exists():
                figures["report"] = report_sizes(args, work, template)
            else:
                figures["report"] = [{"error": "no template run folder (the CLI run failed)"}]
        profile_file = work / "profile.txt"
        profile_text = profile_file.read_text(encoding="utf-8") if profile_file.exists() else None
    finally:
        if args.keep_work:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    figures["machine"]["loadavg_end"] = os.getloadavg()
    figures["bench_wall_s"] = time.perf_counter() - started
    figures["targets"] = build_targets(figures)
    table = markdown(figures)
    stem = figures["date"] + ("-quick" if args.quick else "")
    write_figures(args.out, stem, figures, table)
    if profile_text is not None:
        (args.out / f"{stem}-profile.txt").write_text(profile_text, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
