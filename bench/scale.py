"""The scale figure (issue 19): 10,000 quality cases × 2 variants, offline, through N shards and a merge.

`python -m bench.scale [--cases 10000] [--shards 4]` synthesises the cases (`bench.data.synth_cases`), runs
the whole study once in one process and then shard by shard, each in a fresh process (so each peak RSS is
its own), merges the shards with `harness.run.merge` and scores the merged folder, and checks that the merged
summary.json equals the whole run's outside the timing keys. Writes reports/bench/<date>-scale.{json,md}.

Offline: both variants are the reference verifier (`harness.baselines`), the full one and one with its first
signal switched off, under the labels `openai:reference-full` and `openai:reference-no-<signal>` (a run's
variants come from model specs, and only `openai:` specs make more than one). No request leaves the process.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.data import synth_cases
from bench.procs import ROOT, host, write_figures
from harness.run.merge import without_timings


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def study_for(cases: Path, shard: str | None) -> Any:
    from harness.baselines.reference import SIGNALS
    from harness.run.study import Study

    models = ["openai:reference-full", f"openai:reference-no-{next(iter(SIGNALS))}"]
    return Study(cases=[cases], models=models, cache=None, report=False, shard=shard, concurrency=8)


def factory(variant: Any, epoch: int) -> Any:
    """The reference verifier; the second variant without its first signal (an ablation, so figures differ)."""
    from harness.baselines.reference import SIGNALS, ReferenceSettings, ReferenceVerifier

    if variant.model.endswith("-full"):
        return ReferenceVerifier()
    return ReferenceVerifier(ReferenceSettings(signals=tuple(SIGNALS)[1:]))


def run_part(cases: Path, out: Path, shard: str | None) -> dict[str, Any]:
    """In a fresh process: load the corpus, run the (shard of the) study, score the whole run only."""
    from harness.corpus.loader import load_cases
    from harness.run.runner import run_study
    from harness.score.scoring import GateSettings, score_run

    start = time.perf_counter()
    loaded = load_cases([cases])
    load_s = time.perf_counter() - start
    result = run_study(study_for(cases, shard), loaded, out, factory)
    run_s = time.perf_counter() - start - load_s
    score_s = None
    if shard is None:
        began = time.perf_counter()
        score_run(out, GateSettings())
        score_s = time.perf_counter() - began
    return {
        "shard": shard,
        "units": result.finished,
        "load_s": load_s,
        "run_s": run_s,
        "score_s": score_s,
        "wall_s": time.perf_counter() - start,
        "peak_rss_mib": _peak_mib(),
    }


def merge_part(shards: list[Path], out: Path) -> dict[str, Any]:
    """In a fresh process: merge the shard folders (checks included), then score the merged run."""
    from harness.run.merge import merge_shards
    from harness.score.scoring import GateSettings, score_run

    start = time.perf_counter()
    merge_shards(shards, out)
    merge_s = time.perf_counter() - start
    results = sum(1 for _ in (out / "results.jsonl").open(encoding="utf-8"))
    merge_peak = _peak_mib()
    began = time.perf_counter()
    score_run(out, GateSettings())
    return {
        "results": results,
        "merge_s": merge_s,
        "merge_us_per_result": 1e6 * merge_s / max(1, results),
        "merge_peak_rss_mib": merge_peak,
        "score_s": time.perf_counter() - began,
        "peak_rss_mib": _peak_mib(),
    }


def child(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", *args], capture_output=True, text=True, cwd=ROOT, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"bench.scale {args[0]} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return dict(json.loads(lines[-1]))


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ (paths), for a report that says what, not only whether."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "."]


def measure(n: int, shards: int, work: Path) -> dict[str, Any]:
    started = time.perf_counter()
    synth_cases(ROOT / "cases" / "quality", n, work / "cases")
    whole = child("part", "--cases", str(work / "cases"), "--out", str(work / "whole"))
    parts = [
        child("part", "--cases", str(work / "cases"), "--out", str(work / f"shard-{i}"), "--shard", f"{i}/{shards}")
        for i in range(1, shards + 1)
    ]
    folders = [str(work / f"shard-{i}") for i in range(1, shards + 1)]
    merged = child("merge", *folders, "--out", str(work / "merged"))
    single = json.loads((work / "whole" / "summary.json").read_text(encoding="utf-8"))
    joined = json.loads((work / "merged" / "summary.json").read_text(encoding="utf-8"))
    return {
        "cases": n,
        "variants": 2,
        "shards": shards,
        "whole": whole,
        "parts": parts,
        "merge": merged,
        "sharded_wall_s": max(p["wall_s"] for p in parts) + merged["merge_s"] + merged["score_s"],
        "shard_wall_s_sum": sum(p["wall_s"] for p in parts),
        "equal_outside_timings": without_timings(single) == without_timings(joined),
        "differences": differences(without_timings(single), without_timings(joined))[:20],
        "bench_wall_s": time.perf_counter() - started,
    }


def markdown(fig: dict[str, Any]) -> str:
    whole, merge = fig["whole"], fig["merge"]
    lines = [
        f"# Scale: {fig['cases']:,} cases × {fig['variants']} variants through {fig['shards']} shards and a merge "
        f"({fig['date']})",
        "",
        "Offline: the reference verifier (full, and without its first signal), `bench/scale.py`. Each shard and the",
        "merge ran in a fresh process one after another on this machine "
        f"({fig['machine']['nproc']} cores, shared); on {fig['shards']} machines the shards run at once.",
        "",
        "| part | units | load s | run s | wall s | peak RSS MiB |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| whole run, one process | {whole['units']:,} | {whole['load_s']:.1f} | {whole['run_s']:.1f} | "
        f"{whole['wall_s']:.1f} (score {whole['score_s']:.1f}) | {whole['peak_rss_mib']:.0f} |",
    ]
    for p in fig["parts"]:
        lines.append(
            f"| shard {p['shard']} | {p['units']:,} | {p['load_s']:.1f} | {p['run_s']:.1f} | {p['wall_s']:.1f} | "
            f"{p['peak_rss_mib']:.0f} |"
        )
    lines += [
        f"| merge ({merge['results']:,} results) | | | {merge['merge_s']:.2f} | "
        f"{merge['merge_s'] + merge['score_s']:.1f} (score {merge['score_s']:.1f}) | "
        f"{merge['merge_peak_rss_mib']:.0f} (with scoring {merge['peak_rss_mib']:.0f}) |",
        "",
        f"- merge cost: {merge['merge_us_per_result']:.0f} µs per result (checks, read, write; scoring apart)",
        f"- wall time with {fig['shards']} machines (slowest shard + merge + score): {fig['sharded_wall_s']:.1f} s; "
        f"one process: {whole['wall_s']:.1f} s; shards one after another: {fig['shard_wall_s_sum']:.1f} s",
        f"- merged summary.json equals the whole run's outside the timing keys: {fig['equal_outside_timings']}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mode", nargs="?", default="all", choices=["all", "part", "merge"])
    parser.add_argument("folders", nargs="*", type=Path, help="merge: the shard folders")
    parser.add_argument("--cases", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    parser.add_argument("--shard")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (the run folders)")
    args = parser.parse_args(argv)
    if args.mode == "part":
        print(json.dumps(run_part(args.cases, args.out, args.shard)))
        return 0
    if args.mode == "merge":
        print(json.dumps(merge_part(args.folders, args.out)))
        return 0

    work = Path(tempfile.mkdtemp(prefix="vbench-scale-"))
    try:
        fig = measure(args.n, args.shards, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    fig["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    fig["machine"] = host()
    text = markdown(fig)
    write_figures(args.out, f"{fig['date']}-scale", fig, text)
    print(text)
    return 0 if fig["equal_outside_timings"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
