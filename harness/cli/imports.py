"""`vbench import SOURCE PATH --out DIR`: turn an external data set into cases; `vbench import sessions`:
production sessions into unlabelled cases."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import UsageError
from harness.cli import EXIT_OK, EXIT_USAGE
from harness.corpus.adapters import ADAPTERS
from harness.corpus.adapters.importer import collect, write_folder


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    imp = sub.add_parser("import", help="import an external data set as quality cases")
    imp_sub = imp.add_subparsers(dest="import_source", metavar="SOURCE")
    for name, adapter in ADAPTERS.items():
        one = imp_sub.add_parser(name, help=f"{adapter.dataset} ({adapter.licence_note})")
        one.add_argument("path", type=Path, help="the source file")
        one.add_argument("--out", type=Path, required=True, help="folder for the generated cases")
        one.add_argument("--limit", type=_positive, default=None, help="import at most N records")
        one.set_defaults(handler=cmd_import, adapter_name=name)
    ses = imp_sub.add_parser("sessions", help="production sessions (JSONL, or a SQLAlchemy URL with --query)")
    ses.add_argument("source", help="a JSONL file, one session per line, or a SQLAlchemy URL")
    ses.add_argument("--out", type=Path, required=True, help="folder for the unlabelled cases (DIR/<id>.yaml)")
    ses.add_argument("--query", help="SQL whose rows have the columns id, session, executor (database sources)")
    ses.add_argument("--limit", type=_positive, default=None, help="import at most N sessions")
    ses.add_argument(
        "--sample", choices=("random", "disagreement"), default=None, help="the order sessions are taken in"
    )
    ses.add_argument("--seed", type=int, default=0, help="the seed of --sample random")
    ses.set_defaults(handler=cmd_import_sessions)
    imp.set_defaults(handler=lambda _args: (imp.print_help(), EXIT_USAGE)[1])


def cmd_import_sessions(args: argparse.Namespace) -> int:
    """Write one unlabelled case per good session; name every bad row. 2 when the source cannot be read or no
    session was imported (neither written now nor already there)."""
    from harness.corpus.session_import import SourceError, import_sessions

    try:
        report = import_sessions(args.source, args.out, args.query, args.limit, args.sample, args.seed)
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read or write: {exc}") from None
    for line in report.lines():
        print(line, file=sys.stderr if line.startswith(("skipped", "kept")) else sys.stdout)
    if not (report.written or report.unchanged or report.conflicts):
        raise UsageError(f"nothing imported into {args.out}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    """Import what can be imported; name every skipped record by line. 2 when nothing was imported."""
    adapter = ADAPTERS[args.adapter_name]
    path: Path = args.path
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        cases, summary = collect(adapter, path, args.limit)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    for problem in summary.skipped:
        print(f"skipped {problem}", file=sys.stderr)
    for line in summary.lines():
        print(line)
    if not summary.imported:
        raise UsageError(f"nothing imported from {path}; {args.out} left unchanged")
    written = write_folder(args.out, adapter, cases, summary)
    print(f"wrote {len(written)} file(s) to {args.out}")
    return EXIT_OK


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
