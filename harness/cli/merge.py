"""`vbench merge RUN... --out DIR`: the shards of one run (`vbench run --shard I/N`) as one scored run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness.cli import EXIT_GATE, EXIT_OK
from harness.run.merge import merge_shards


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    merge = sub.add_parser(
        "merge", help="merge the shard folders of one run (vbench run --shard I/N) into one scored run folder"
    )
    merge.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="every shard folder, 1/N to N/N")
    merge.add_argument("--out", type=Path, required=True, help="the merged run folder (must not hold a run)")
    merge.add_argument("--no-report", action="store_true", help="skip the HTML report")
    merge.set_defaults(handler=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from harness.cli.console import print_summary
    from harness.report.load import gate_settings
    from harness.score.scoring import score_run

    err = Console(stderr=True, soft_wrap=True)
    manifest = merge_shards(args.runs, args.out)
    gates = gate_settings(manifest)  # the gates the shards ran with, so the merge decides as the run would
    summary = score_run(args.out, gates)
    from harness.kit.certificate import write_run_certificate

    write_run_certificate(args.out, manifest, summary)
    if not args.no_report:
        from harness.report.render import render_run

        render_run([args.out], args.out)
    err.print(f"merged {len(args.runs)} shards into {args.out}", highlight=False, markup=False)
    print_summary(
        Console(width=None if Console().is_terminal else 160), summary, args.out, 0, report=not args.no_report
    )
    return EXIT_OK if summary.passed else EXIT_GATE
