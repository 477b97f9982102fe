"""`python -m bench.history_diff`: how long `vbench history diff A B` takes over a store of 1,000 recorded versions.

One real offline `vbench run` (the reference verifier) over the 469 quality cases is recorded; the store is then
filled with `--versions` records of it (a new id, commit and time each, and a few cases' outcomes flipped per
version, as a prompt change moves them). Each repetition runs `vbench history diff <oldest> history:main` in a
fresh process (`bench.procs.timed_process`); the figure is the median wall time of `--reps`. `history list` and
`history trend` are timed beside it.

Target: under 2 s whole process for diff. Writes reports/bench/<date>-history-diff.{json,md}; exits 1 when the
median misses the target or a repetition fails.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.procs import ROOT, host, timed_process, write_figures

TARGET_S = 2.0


def fill_store(run_dir: Path, store_dir: Path, versions: int, seed: int = 37) -> list[str]:
    """`versions` records of the run in a folder store, oldest first; their ids."""
    from harness.history.record import record_run_folder
    from harness.history.store import open_store

    store = open_store(store_dir)
    template = record_run_folder(run_dir, branch="main", commit="0" * 40)
    rng = random.Random(seed)
    correct = list(template.units["verdict_correct"])
    ids = []
    for v in range(versions):
        for i in rng.sample(range(len(correct)), 3):  # a prompt change moves a few cases
            correct[i] = not correct[i]
        stamp = f"2026{1 + v // 28 // 31 % 12:02d}{1 + v // 28 % 28:02d}T{v % 24:02d}0000.{v:06d}Z"
        head = template.head.model_copy(update={"id": f"{stamp}-{v:08x}", "recorded_at": stamp, "commit": f"{v:040x}"})
        record = template.model_copy(
            update={"head": head, "units": {**template.units, "verdict_correct": list(correct)}}
        )
        store.add(record)
        ids.append(head.id)
    return ids


def timed(args: list[str], reps: int) -> dict[str, Any]:
    runs = [timed_process([sys.executable, "-m", "harness.cli", *args]) for _ in range(reps)]
    failed = [r for r in runs if r["returncode"] != 0]
    return {
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "max_wall_s": max(r["wall_s"] for r in runs),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
        "failed": len(failed),
        "output": failed[0]["output"] if failed else "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        work = Path(tmp)
        run_dir = work / "run"
        made = timed_process(
            [sys.executable, "-m", "harness.cli", "run", "--cases", str(ROOT / "cases" / "quality"),
             "--cases", str(ROOT / "cases" / "generated"), "--out", str(run_dir), "--no-report", "--no-cache"]
        )  # fmt: skip
        if made["returncode"] not in (0, 1):
            print(made["output"])
            return 1
        store = work / "history"
        ids = fill_store(run_dir, store, args.versions)
        figures: dict[str, Any] = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "versions": args.versions,
            "reps": args.reps,
            "host": host(),
            "store_mib": round(sum(p.stat().st_size for p in store.rglob("*.json")) / 2**20, 1),
            "diff": timed(["history", "diff", ids[0], "history:main", "--history", str(store)], args.reps),
            "list": timed(["history", "list", "--history", str(store), "--json"], args.reps),
            "trend": timed(["history", "trend", "unsafe_pass_rate", "--history", str(store)], args.reps),
        }
    d = figures["diff"]
    ok = d["failed"] == 0 and d["median_wall_s"] < TARGET_S
    table = (
        f"# `vbench history diff` over {args.versions} recorded versions\n\n"
        f"Date {figures['date']}; {figures['host']}; store {figures['store_mib']} MiB (folder store, 469 cases a run).\n"
        f"Command: `python -m bench.history_diff --versions {args.versions} --reps {args.reps}`\n\n"
        "| command | median wall s | max wall s | median CPU s | peak RSS MiB | failed |\n|---|---|---|---|---|---|\n"
        + "".join(
            f"| history {name} | {f['median_wall_s']:.3f} | {f['max_wall_s']:.3f} | {f['median_cpu_s']:.3f} | "
            f"{f['peak_rss_mib']:.0f} | {f['failed']} |\n"
            for name, f in ((n, figures[n]) for n in ("diff", "list", "trend"))
        )
        + f"\nTarget: diff under {TARGET_S:g} s whole process: **{'met' if ok else 'NOT met'}**.\n"
    )
    stem = f"{datetime.now(UTC).strftime('%Y-%m-%d')}-history-diff"
    write_figures(args.out, stem, figures, table)
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
