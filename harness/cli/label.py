"""`vbench label serve|export` and `vbench agreement`: label imported production sessions, measure how far the
annotators and the production verifier agree, and write the labelled sessions as cases."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from harness import UsageError
from harness.cli import EXIT_OK, EXIT_USAGE
from harness.report.labelling import DEFAULT_PORT

T = TypeVar("T")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    label = sub.add_parser("label", help="label imported production sessions in the browser; export them as cases")
    label_sub = label.add_subparsers(dest="label_command", metavar="ACTION")
    serve = label_sub.add_parser("serve", help="a local labelling page on 127.0.0.1")
    serve.add_argument("folder", type=Path, help="the folder `vbench import sessions` wrote")
    serve.add_argument(
        "--annotator",
        help="your name: answers go to FOLDER/labels/<name>.jsonl (without it, each browser says who labels)",
    )
    serve.add_argument(
        "--annotators",
        help="comma-separated roster for one server of several annotators: each is given a share of the sessions",
    )
    serve.add_argument(
        "--overlap",
        type=float,
        default=0.0,
        help="with --annotators: the share of sessions every annotator labels, for agreement (default 0)",
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT}; 0: a free one)"
    )
    serve.add_argument("--port-file", type=Path, help="write the bare port number here once requests are accepted")
    serve.set_defaults(handler=cmd_serve)
    export = label_sub.add_parser("export", help="write the labelled sessions as case files")
    export.add_argument("folder", type=Path, help="the folder `vbench import sessions` wrote")
    export.add_argument("--out", type=Path, required=True, help="folder for the labelled cases")
    export.set_defaults(handler=cmd_export)
    label.set_defaults(handler=lambda _args: (label.print_help(), EXIT_USAGE)[1])

    agree = sub.add_parser(
        "agreement", help="annotator-annotator and annotator-verifier agreement on labelled sessions"
    )
    agree.add_argument("folder", type=Path, help="the folder `vbench import sessions` wrote")
    agree.add_argument("--out", type=Path, default=None, help="where to write (default FOLDER/agreement.json)")
    agree.set_defaults(handler=cmd_agreement)


def _folder_problem(folder: Path) -> str | None:
    if not folder.is_dir():
        return f"no such folder: {folder}"
    if not any(folder.glob("*.yaml")):
        return f"{folder} holds no imported session (*.yaml); run `vbench import sessions` first"
    return None


def _read_folder(folder: Path, action: Callable[[Path], T]) -> T:
    """`action(folder)`; a folder or a file in it that cannot be read is a `UsageError` saying why."""
    problem = _folder_problem(folder)
    if problem is None:
        try:
            return action(folder)
        except ValueError as exc:
            problem = str(exc)
    raise UsageError(problem)


def _name_problem(name: str, flag: str) -> str | None:
    from harness.corpus.labels import ADJUDICATED, ANNOTATOR_PATTERN

    if not ANNOTATOR_PATTERN.match(name):
        return f"{flag} {name!r}: use 1-64 characters of A-Z a-z 0-9 . _ -"
    if name == ADJUDICATED:
        return f"{flag} {ADJUDICATED} is the adjudication file's name; pick another"
    return None


def cmd_serve(args: argparse.Namespace) -> int:
    from harness.report.labelling import serve

    if problem := _folder_problem(args.folder):
        raise UsageError(problem)
    roster = [n.strip() for n in args.annotators.split(",") if n.strip()] if args.annotators else []
    names = [(args.annotator, "--annotator")] if args.annotator is not None else []
    for name, flag in [*names, *((n, "--annotators") for n in roster)]:
        if problem := _name_problem(name, flag):
            raise UsageError(problem)
    if args.annotator is not None and roster:
        raise UsageError("--annotator is one person's page, --annotators a roster for one server: give one")
    if not 0 <= args.overlap <= 1:
        raise UsageError(f"--overlap {args.overlap}: a share between 0 and 1")
    if args.overlap and len(roster) < 2:
        raise UsageError("--overlap shares sessions between the annotators of --annotators: name two or more")
    if args.port_file is not None and not args.port_file.parent.is_dir():
        raise UsageError(f"--port-file {args.port_file}: its folder does not exist")
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.folder, args.annotator, args.port, args.port_file, roster, args.overlap))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return EXIT_OK


def cmd_agreement(args: argparse.Namespace) -> int:
    from harness.corpus.labels import torn_notes
    from harness.score.agreement import agreement_report, write_agreement

    report = _read_folder(args.folder, agreement_report)
    out = write_agreement(report, args.out or args.folder / "agreement.json")
    for note in torn_notes(args.folder):
        print(note, file=sys.stderr)
    for line in report.lines():
        print(line)
    print(f"wrote {out}")
    if not report.annotators:
        print(f"no labels under {args.folder}/labels: nothing was measured", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from harness.score.label_export import export_cases

    if args.out.resolve() == args.folder.resolve():
        raise UsageError("--out must be another folder than the imported sessions")
    result = _read_folder(args.folder, lambda folder: export_cases(folder, args.out))
    for case_id, why in result.left_out.items():
        print(f"left out {case_id}: {why}", file=sys.stderr)
    print(json.dumps({"written": len(result.written), "left_out": len(result.left_out)}))
    if not result.written:
        print("no session is fully labelled: nothing exported", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {len(result.written)} case(s) to {args.out}")
    return EXIT_OK
