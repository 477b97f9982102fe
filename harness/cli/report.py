"""`vbench report`: render a finished run again, or several runs into one report."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness import UsageError
from harness.cli import EXIT_GATE, EXIT_OK
from harness.report.browser import screenshot
from harness.report.prices import load_prices
from harness.report.render import render_run
from harness.report.select import DEFAULT_LIMIT
from harness.run.folder import MARKDOWN_FILE, SCREENSHOT_FILE
from harness.run.lock import acquire


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rep = sub.add_parser(
        "report",
        help="write report.html and summary.md for finished run folders (one: re-render it; several: combine them)",
    )
    rep.add_argument(
        "run_dirs", type=Path, nargs="+", metavar="RUN_DIR", help="run folders (several: one report of all)"
    )
    rep.add_argument("--out", type=Path, help="output folder (default: the run folder; required for several runs)")
    rep.add_argument(
        "--prices", type=Path, help="price table (TOML/JSON/YAML, USD per 1M tokens); default $VBENCH_PRICES"
    )
    rep.add_argument(
        "--max-embedded",
        type=int,
        default=DEFAULT_LIMIT,
        help=f"results embedded for drill-down, failures first (default {DEFAULT_LIMIT})",
    )
    rep.add_argument(
        "--rescore", action="store_true", help="score again from results.jsonl (rewrites summary.json, outcomes, junit)"
    )
    rep.add_argument(
        "--agreement", type=Path, help="an agreement.json (`vbench agreement`) to show in an Agreement section"
    )
    rep.add_argument(
        "--estimate", type=Path, help="an estimate.json (`vbench estimate`) to show in a Production estimate section"
    )
    rep.add_argument("--label-url", default=None, help="where `vbench label serve` runs, for the section's links")
    rep.add_argument("--screenshot", action="store_true", help=f"also save {SCREENSHOT_FILE} (needs chromium)")
    rep.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    if len(args.run_dirs) > 1 and args.out is None:
        raise UsageError("give --out for a report that combines several runs")
    if args.max_embedded < 1:
        raise UsageError("--max-embedded must be at least 1")
    out = args.out or args.run_dirs[0]
    for folder in dict.fromkeys([*args.run_dirs, out]):  # a run folder is scored again here when it has no summary
        if folder.is_dir():
            acquire(folder)  # held until the command ends (`main`): a live run's folder is refused
    started = time.perf_counter()
    prices = load_prices(args.prices)
    agreement = None
    if args.agreement is not None:
        from harness.report.agreement_view import DEFAULT_LABEL_URL, agreement_section

        agreement = agreement_section(args.agreement, args.label_url or DEFAULT_LABEL_URL)
    estimate = None
    if args.estimate is not None:
        from harness.report.estimate_view import estimate_section

        estimate = estimate_section(args.estimate)
    report = render_run(
        args.run_dirs,
        out,
        prices=prices,
        limit=args.max_embedded,
        rescore=args.rescore,
        agreement=agreement,
        estimate=estimate,
    )
    print(f"report: {report}")
    print(f"summary: {report.parent / MARKDOWN_FILE}")
    if args.screenshot:
        png = screenshot(report, report.parent / SCREENSHOT_FILE)
        print(f"screenshot: {png}")
    print(f"rendered in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    unfinished = [line for run_dir in args.run_dirs if (line := _unfinished(run_dir))]
    for line in unfinished:
        print(line, file=sys.stderr)
    return EXIT_GATE if unfinished else EXIT_OK


def _unfinished(run_dir: Path) -> str | None:
    """One line for a run that ended before all its results were written (its summary says so), else None."""
    from harness.score.summary_model import read_summary_or_none

    summary = read_summary_or_none(run_dir)
    missing = summary.run.unfinished if summary is not None and summary.run is not None else None
    if missing is None:
        return None
    return (
        f"unfinished: {run_dir} holds {missing.results:,} of {missing.planned:,} results; finish it with "
        f"`vbench run` and the same settings, --out {run_dir} --resume"
    )
