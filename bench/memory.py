"""Memory in the size of the run (issue 14, item 9): whole `vbench` processes, peak RSS of the process tree.

`python -m bench.memory [--small 1000] [--large 5000] [--results 100000]`:

1. An offline `vbench run` (the README's main job: reference verifier, report included) over `--small` and
   `--large` quality cases synthesised from the corpus (`bench.data.synth_cases`). Figures: the peak RSS of each
   whole process, their ratio (target ≤ 1.3) and the growth per extra case (target ≤ 25 KiB).
2. `vbench report --rescore` over a synthetic run folder of `--results` results (`bench.data.synth_run`, built from
   the records of the small run): scored and reported in one process. Targets: < 30 s and < 1 GiB.

Each process is started with `os.wait4`, so its peak RSS (ru_maxrss, children included) and CPU are its own.
Writes reports/bench/<date>-memory.{json,md}. Exit 1 when a target is missed (the figures are written anyway).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.data import synth_cases, synth_run
from bench.procs import ROOT, host, timed_process, write_figures

RATIO_TARGET, PER_CASE_KIB_TARGET = 1.3, 25.0
RESULTS_SECONDS_TARGET, RESULTS_MIB_TARGET = 30.0, 1024.0


def whole_process(args: list[str], cwd: Path) -> dict[str, Any]:
    """Run `vbench ARGS` to the end (`timed_process`): wall s, user+sys CPU s, peak RSS MiB of the process and its
    children, and the last lines of its output when it exited other than 0 or 1."""
    done = timed_process([sys.executable, "-m", "harness.cli", *args], cwd=cwd)
    code = done["returncode"]
    return {
        "args": args,
        "exit": code,
        **{k: done[k] for k in ("wall_s", "cpu_s", "peak_rss_mib")},
        "error": None if code in (0, 1) else done["output"].strip().splitlines()[-3:],
    }


def measure(small: int, large: int, results: int, work: Path) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for n in (small, large):
        synth_cases(ROOT / "cases" / "quality", n, work / f"cases-{n}")
        runs[str(n)] = whole_process(["run", "--cases", str(work / f"cases-{n}"), "--out", str(work / f"run-{n}"),
                                      "--no-cache"], work)  # fmt: skip
    a, b = runs[str(small)], runs[str(large)]
    ratio = b["peak_rss_mib"] / a["peak_rss_mib"]
    per_case_kib = (b["peak_rss_mib"] - a["peak_rss_mib"]) * 1024.0 / (large - small)
    folder = work / f"results-{results}"
    written = synth_run(work / f"run-{small}", folder, results)
    report = whole_process(["report", str(folder), "--rescore"], work)
    return {
        "runs": runs,
        "ratio": ratio,
        "per_case_kib": per_case_kib,
        "results": {"count": written, **report, "results_mib": (folder / "results.jsonl").stat().st_size / 2**20},
        "passed": {
            "ratio": ratio <= RATIO_TARGET,
            "per_case_kib": per_case_kib <= PER_CASE_KIB_TARGET,
            "results_seconds": report["wall_s"] < RESULTS_SECONDS_TARGET,
            "results_mib": report["peak_rss_mib"] < RESULTS_MIB_TARGET,
        },
    }


def markdown(fig: dict[str, Any]) -> str:
    small, large = (fig["runs"][k] for k in sorted(fig["runs"], key=int))
    n_small, n_large = sorted(map(int, fig["runs"]))
    res, ok = fig["results"], fig["passed"]

    def verdict(key: str) -> str:
        return "PASS" if ok[key] else "MISSED"

    return "\n".join(
        [
            f"# Memory in the size of the run ({fig['date']})",
            "",
            f"Whole processes on this machine ({fig['machine']['nproc']} cores, {fig['machine'].get('cpu', '?')}, yardstick "
            f"{fig['machine'].get('yardstick_s', float('nan')):.3f} s; load average {fig['load'][0]:.1f} at "
            f"start, {fig['load'][1]:.1f} at end); peak RSS of the process tree (`os.wait4`). `bench/memory.py`.",
            "",
            "| process | wall s | CPU s | peak RSS MiB |",
            "| --- | --- | --- | --- |",
            f"| `vbench run` offline, {n_small:,} cases | {small['wall_s']:.1f} | {small['cpu_s']:.1f} | "
            f"{small['peak_rss_mib']:.0f} |",
            f"| `vbench run` offline, {n_large:,} cases | {large['wall_s']:.1f} | {large['cpu_s']:.1f} | "
            f"{large['peak_rss_mib']:.0f} |",
            f"| `vbench report --rescore`, {res['count']:,} results ({res['results_mib']:.0f} MiB of results.jsonl) | "
            f"{res['wall_s']:.1f} | {res['cpu_s']:.1f} | {res['peak_rss_mib']:.0f} |",
            "",
            "| figure | measured | target | result |",
            "| --- | --- | --- | --- |",
            f"| peak RSS {n_large:,} / {n_small:,} cases | {fig['ratio']:.2f} | ≤ {RATIO_TARGET} | {verdict('ratio')} |",
            f"| growth per extra case | {fig['per_case_kib']:.1f} KiB | ≤ {PER_CASE_KIB_TARGET:.0f} KiB | "
            f"{verdict('per_case_kib')} |",
            f"| {res['count']:,} results scored + reported: wall | {res['wall_s']:.1f} s | < {RESULTS_SECONDS_TARGET:.0f} s"
            f" | {verdict('results_seconds')} |",
            f"| {res['count']:,} results scored + reported: peak RSS | {res['peak_rss_mib']:.0f} MiB | "
            f"< {RESULTS_MIB_TARGET:.0f} MiB | {verdict('results_mib')} |",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    if not 0 < args.small < args.large:
        parser.error("--small must be positive and below --large")

    work = Path(tempfile.mkdtemp(prefix="vbench-memory-"))
    load_start = os.getloadavg()[0]
    try:
        fig = measure(args.small, args.large, args.results, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    fig["load"] = [load_start, os.getloadavg()[0]]
    fig["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    fig["machine"] = host()
    text = markdown(fig)
    write_figures(args.out, f"{fig['date']}-memory", fig, text)
    print(text)
    errors = [r["error"] for r in [*fig["runs"].values(), fig["results"]] if r["error"]]
    return 1 if errors or not all(fig["passed"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
