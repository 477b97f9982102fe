"""`vbench`: the command line. Each subcommand group lives in its own module.

Only the module of the command asked for is imported (`vbench --version` imports none, `vbench cases
validate` never loads scipy, matplotlib or pandas): start-up is what every CI call waits for.

Exit codes are the table `Exit`. Command handlers return OK or GATE and raise a `harness.UsageError` for bad
usage or bad input; `main` maps it, here only, to USAGE and one `error: <message>` line.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from enum import IntEnum
from typing import NoReturn

from harness import UsageError, __version__


class Exit(IntEnum):
    """Every exit code of `vbench` (scripts and CI read them; their meanings never change)."""

    OK = 0
    """Success: the command did what it was asked and every gate passed."""
    GATE = 1
    """A result, not an error: a gate, conformance or certification failed."""
    USAGE = 2
    """Bad usage or bad input: a `UsageError` (its message names the file and key path), or argparse's own."""


EXIT_OK, EXIT_GATE, EXIT_USAGE = Exit.OK, Exit.GATE, Exit.USAGE

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success: every gate held (`vbench run`), the candidate may ship, the implementation is certified",
    EXIT_GATE: "a gate or conformance failed: a policy case disagreed, a threshold was missed, a candidate is "
    "blocked (or inconclusive with --require-ship), a certification failed",
    EXIT_USAGE: "bad usage or bad input, before or instead of a result: a bad flag, study file or case file (named "
    "with its key path), a missing API key, an endpoint that cannot be reached, or a run the breaker stopped "
    "(finish it with --resume)",
}
"""What each exit code means, for every command (the documentation's exit-code page is made from it)."""

COMMANDS: dict[str, str] = {
    "cases": "harness.cli.cases",
    "import": "harness.cli.imports",
    "run": "harness.cli.run",
    "compare": "harness.cli.run",
    "merge": "harness.cli.merge",
    "report": "harness.cli.report",
    "sut": "harness.cli.certify",
    "certify": "harness.cli.certify",
    "power": "harness.cli.power",
    "label": "harness.cli.label",
    "agreement": "harness.cli.label",
    "estimate": "harness.cli.estimate",
    "init": "harness.cli.init",
    "ci": "harness.cli.ci",
    "history": "harness.cli.history",
}
"""Command name -> the module whose `register` adds it (a module may register several)."""


def command_modules(argv: Sequence[str]) -> list[str]:
    """The modules to import: the asked command's only, or every one (help, or no known command)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first in COMMANDS and not any(a in ("-h", "--help") for a in argv[: list(argv).index(first)]):
        return [COMMANDS[first]]
    return list(dict.fromkeys(COMMANDS.values()))


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vbench", description="Measure the AIOps verifier against a labelled corpus.")
    parser.add_argument("--version", action="version", version=f"verifier-bench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if "--version" in argv:
        return parser  # answered before any command module loads
    for name in command_modules(argv):
        importlib.import_module(name).register(sub)
    return parser


ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"
"""pyarrow's allocator, which pandas' string columns use: the system's unless the user chose one. pyarrow's own
default (mimalloc) kept what scoring had freed: the peak memory of a 5,000-case run was 1.3 times that of a
1,000-case one with the system allocator, 1.45 times with mimalloc."""


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault(ARROW_POOL_ENV, "system")  # read when pyarrow first allocates, after this
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def run() -> NoReturn:
    """The `vbench` command (and `python -m harness.cli`): `main`, then `exit_now` with its code."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """Exit without the interpreter's teardown, which a finished run does not need.

    Freeing every object of a run one by one is a visible share of what a user waits for, after everything was
    written, and it grows with the run. What an exit must do is still done: the atexit functions run (the cache writer's
    flush, `weakref.finalize` clean-ups, logging's flush), then the standard streams are flushed.
    """
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    run()
