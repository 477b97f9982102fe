"""`vbench`: the command line. Each subcommand group lives in its own module.

Exit codes: 0 success; 1 a gate or conformance failed; 2 bad usage or bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness import __version__
from harness.cli import cases as cases_cmd
from harness.cli import certify as certify_cmd
from harness.cli import imports as imports_cmd
from harness.cli import power as power_cmd
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd

EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2

COMMAND_MODULES = [cases_cmd, imports_cmd, run_cmd, report_cmd, certify_cmd, power_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vbench", description="Measure the AIOps verifier against a labelled corpus.")
    parser.add_argument("--version", action="version", version=f"verifier-bench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
