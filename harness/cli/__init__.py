"""`vbench`: the command line. Each subcommand group lives in its own module.

Only the module of the command asked for is imported (`vbench --version` imports none, `vbench cases
validate` never loads scipy, matplotlib or pandas): start-up is what every CI call waits for.

Exit codes are the table `Exit`. Command handlers return OK or GATE and raise a `harness.UsageError` for bad
usage or bad input; `main` maps it, here only, to USAGE and one `error: <message>` line. `main` maps the faults
that stop a command too, each to one line and, for a run, the command that resumes it: a run the breaker stopped
(an endpoint or the store down), a full disk (USAGE), Ctrl-C (INTERRUPTED) and SIGTERM (TERMINATED).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import importlib
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from enum import IntEnum
from pathlib import Path
from typing import NoReturn

from harness import RunStopped, UsageError, __version__


class Exit(IntEnum):
    """Every exit code of `vbench` (scripts and CI read them; their meanings never change)."""

    OK = 0
    """Success: the command did what it was asked and every gate passed."""
    GATE = 1
    """A result, not an error: a gate, conformance or certification failed."""
    USAGE = 2
    """Bad usage or bad input: a `UsageError` (its message names the file and key path), or argparse's own; also
    a run stopped by a fault outside it (an endpoint or the store down, a full disk): --resume finishes it."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (SIGINT), 128 + 2 as shells report it: what finished is kept, --resume finishes it."""
    TERMINATED = 143
    """Stopped by SIGTERM (128 + 15: a CI job cancelled, a container stopped): as INTERRUPTED."""


EXIT_OK, EXIT_GATE, EXIT_USAGE = Exit.OK, Exit.GATE, Exit.USAGE

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success: every gate held (`vbench run`), the candidate may ship, the implementation is certified",
    EXIT_GATE: "a gate or conformance failed: a policy case disagreed, a threshold was missed, a candidate is "
    "blocked (or inconclusive with --require-ship), a certification failed",
    EXIT_USAGE: "bad usage or bad input, before or instead of a result: a bad flag, study file or case file (named "
    "with its key path), a missing API key, an endpoint that cannot be reached, a run folder another vbench is "
    "writing, or a run stopped by a fault: the breaker (an endpoint or the store down) or a full disk (finish it "
    "with --resume)",
    Exit.INTERRUPTED: "interrupted by Ctrl-C (SIGINT): the results written are kept; the command printed resumes the run",
    Exit.TERMINATED: "stopped by SIGTERM (a cancelled CI job, a stopped container): as 130",
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
    with _terminate_as_interrupt() as signals:
        try:
            return _command(args_list, signals)
        except KeyboardInterrupt:  # while the command's modules loaded, before it started: nothing was written
            return _stopped(signals, f"nothing was written; run the same command again: {_shown(args_list)}")


def _command(args_list: list[str], signals: list[str]) -> int:
    """`main` once SIGTERM is an interrupt: parse, run the command's handler, map what stopped it."""
    parser = build_parser(args_list)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    from harness.run.lock import command_session

    with command_session() as folders:
        try:
            return int(args.handler(args))
        except UsageError as exc:
            return usage_error(exc)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (`_terminate_as_interrupt`)
            return _stopped(signals, _next_step(args, args_list, folders))
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            where = f" writing {exc.filename}" if exc.filename else ""
            print(f"error: no space left on the device{where}; free some, then {_next_step(args, args_list, folders)}",
                  file=sys.stderr)  # fmt: skip
            return EXIT_USAGE
        except RunStopped as exc:  # the breaker: an endpoint or the store down
            print(f"error: {exc}; {_next_step(args, args_list, folders)}", file=sys.stderr)
            return EXIT_USAGE


def usage_error(exc: UsageError) -> Exit:
    """The one mapping of bad usage or input: one `error: <message>` line, exit code USAGE (`main`, and the
    `python -m harness.cli.<script>` entries that have a `main` of their own)."""
    print(f"error: {exc}", file=sys.stderr)
    return Exit.USAGE


def _stopped(signals: Sequence[str], next_step: str) -> Exit:
    """The one line of a command a signal stopped, and its exit code (INTERRUPTED, or TERMINATED for SIGTERM)."""
    name = signals[-1] if signals else "SIGINT"
    print(f"{name.lower()}: stopped; {next_step}", file=sys.stderr)
    return Exit.TERMINATED if name == "SIGTERM" else Exit.INTERRUPTED


def _shown(argv: Sequence[str]) -> str:
    return shlex.join(["vbench", *argv])


def _next_step(args: argparse.Namespace, argv: Sequence[str], folders: Sequence[Path]) -> str:
    """What finishes a command that stopped: for a run, the same command on its folder with --resume (the results
    written are kept, nothing finished is sent again); for any other, the same command again."""
    if args.command != "run" or not folders:
        again = "nothing was written" if args.command == "run" else "its output may be partial"
        return f"{again}; run the same command again: {_shown(argv)}"
    run_dir = folders[0]
    words = list(argv)
    if not any(w == "--out" or w.startswith("--out=") for w in argv):
        words += ["--out", str(run_dir)]
    if "--resume" not in argv:
        words.append("--resume")
    return f"the results so far are in {run_dir}; to finish the run: {_shown(words)}"


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[list[str]]:
    """SIGTERM interrupts as Ctrl-C does (SIGINT is raised), for the length of a command: the run's clean-up (the
    results file closed, the kept replies flushed, the finishing child stopped) runs for either, and `main`
    reports both in one line. Yields the names of the signals received. Only the main thread can set handlers."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_term(signum: int, _frame: object) -> None:
        received.append("SIGTERM")
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):  # Ctrl-C ignored (a job in
            raise KeyboardInterrupt  # the background): stop here
        signal.raise_signal(signal.SIGINT)  # Ctrl-C's path: asyncio's run cancels its task, then interrupts

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, old)


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
