"""`python -m bench.report_time`: how long `vbench report RUN_DIR` of a 1,000-case run takes, as a whole process.

The run folder is a real offline `vbench run` (the reference verifier) over N quality cases copied from the corpus
(`bench.data.synth_cases`), or one given with `--run`. Each repetition re-renders it in a fresh process
(`bench.procs.timed_process`: wall, user+sys CPU, peak RSS); the figure is the median of `--reps`. With
`--against ROOT` (another checkout, e.g. the main branch), that checkout's `vbench report` is timed in turn with
ours, alternating, so both see the same machine load: the ratio is the figure to read on a busy machine.
The machine's yardstick (`bench.procs.yardstick`) and load average go beside it.

Target: at most 0.7 s whole process on a 2-core machine. Writes reports/bench/<date>-report-time.{json,md}; exits 1
when the median misses the target or a repetition fails (the figures are written anyway).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.data import synth_cases
from bench.procs import ROOT, host, timed_process, write_figures

TARGET_S = 0.7


def report_once(root: Path, run_dir: Path, out: Path) -> dict[str, Any]:
    """`vbench report RUN_DIR --out OUT` of the checkout at `root`, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = timed_process([sys.executable, "-m", "harness.cli", "report", str(run_dir), "--out", str(out)], env, root)
    if done["returncode"] != 0:
        raise RuntimeError(f"vbench report ({root}) exited {done['returncode']}: {done['output'][-400:]}")
    return {k: done[k] for k in ("wall_s", "cpu_s", "user_s", "sys_s", "peak_rss_mib")}


def make_run(n: int, work: Path) -> Path:
    """An offline `vbench run` of `n` quality cases: a real run folder, as a user would re-render."""
    cases, run_dir = work / f"cases-{n}", work / f"run-{n}"
    synth_cases(ROOT / "cases" / "quality", n, cases)
    cmd = [sys.executable, "-m", "harness.cli", "run", "--cases", str(cases), "--out", str(run_dir), "--no-cache"]
    done = timed_process(cmd)
    if done["returncode"] not in (0, 1):
        raise RuntimeError(f"vbench run exited {done['returncode']}: {done['output'][-400:]}")
    return run_dir


def median_of(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in ("wall_s", "cpu_s", "peak_rss_mib")}


def measure(run_dir: Path, reps: int, against: Path | None, work: Path) -> dict[str, Any]:
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    report_once(ROOT, run_dir, work / "warm")  # compiles the templates' bytecode cache once, as any later run finds it
    if against is not None:
        report_once(against, run_dir, work / "warm-against")
    for _ in range(reps):
        ours.append(report_once(ROOT, run_dir, work / "out"))
        if against is not None:
            theirs.append(report_once(against, run_dir, work / "out-against"))
    fig: dict[str, Any] = {"results": sum(1 for _ in (run_dir / "results.jsonl").open()), "reps": ours,
                           "median": median_of(ours)}  # fmt: skip
    if against is not None:
        fig["against"] = {"root": str(against), "reps": theirs, "median": median_of(theirs)}
        fig["ratio_wall"] = fig["median"]["wall_s"] / fig["against"]["median"]["wall_s"]
        fig["ratio_cpu"] = fig["median"]["cpu_s"] / fig["against"]["median"]["cpu_s"]
    fig["passed"] = fig["median"]["wall_s"] <= TARGET_S
    return fig


def markdown(fig: dict[str, Any]) -> str:
    m, machine = fig["median"], fig["machine"]
    lines = [
        f"# `vbench report` of a {fig['results']:,}-result run ({fig['date']})",
        "",
        f"Machine: {machine['cpu']}, {machine['nproc']} cores, yardstick {machine['yardstick_s']} s; "
        f"load average {fig['load'][0]:.2f} → {fig['load'][1]:.2f}. Median of {len(fig['reps'])} fresh processes.",
        "",
        "| measure | this checkout | target |" + (" other checkout | ratio |" if "against" in fig else ""),
        "|---|---|---|" + ("---|---|" if "against" in fig else ""),
    ]
    for key, name, unit in (("wall_s", "wall", "s"), ("cpu_s", "CPU (user+sys)", "s"), ("peak_rss_mib", "peak RSS", "MiB")):  # fmt: skip
        target = f"≤ {TARGET_S} s" if key == "wall_s" else ""
        row = f"| {name} | {m[key]:.2f} {unit} | {target} |"
        if "against" in fig:
            other = fig["against"]["median"][key]
            row += f" {other:.2f} {unit} | {m[key] / other:.2f} |"
        lines.append(row)
    lines += ["", f"Target met: {'yes' if fig['passed'] else 'no'}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000, help="cases of the run to build (without --run)")
    parser.add_argument("--run", type=Path, help="an existing run folder to re-render instead")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout's root, timed in turn with this one")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="vbench-report-time-"))
    load_start = os.getloadavg()[0]
    try:
        run_dir = args.run or make_run(args.cases, work)
        fig = measure(run_dir, args.reps, args.against, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fig["load"] = [load_start, os.getloadavg()[0]]
    fig["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    fig["machine"] = host()
    text = markdown(fig)
    write_figures(args.out, f"{fig['date']}-report-time", fig, text)
    print(text)
    return 0 if fig["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
