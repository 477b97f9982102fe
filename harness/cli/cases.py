"""`vbench cases ...`: validate and check the corpus."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from rich.console import Console

from harness.corpus.loader import CorpusError, load_cases
from harness.run.execute import run_case, scripted_verifier_for
from harness.score.conformance import (
    deterministic_mismatches,
    invariant_violations,
    label_consistency_problems,
    policy_case_mismatches,
)
from harness.system.models import VerifierCall
from harness.system.pipeline import conclude, prepare

DEFAULT_CASES = Path("cases")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cases = sub.add_parser("cases", help="work with the case corpus")
    cases_sub = cases.add_subparsers(dest="cases_command", metavar="ACTION")
    validate = cases_sub.add_parser("validate", help="load every case strictly; errors name file and key path")
    validate.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_CASES])
    validate.set_defaults(handler=cmd_validate)
    check = cases_sub.add_parser("check", help="run policy cases and the deterministic parts of quality cases")
    check.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_CASES])
    check.set_defaults(handler=cmd_check)
    cases.set_defaults(handler=lambda _args: (cases.print_help(), 2)[1])


def _load(dirs: list[Path], console: Console):  # type: ignore[no-untyped-def]
    missing = [d for d in dirs if not d.exists()]
    if missing:
        console.print(f"[red]no such path: {', '.join(map(str, missing))}[/red]")
        return None
    try:
        return load_cases(dirs)
    except CorpusError as exc:
        console.print(str(exc), markup=False, highlight=False)
        return None


def cmd_validate(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    cases = _load(args.dirs, console)
    if cases is None:
        return 2
    policy = sum(1 for c in cases if c.kind == "policy")
    Console().print(f"{len(cases)} cases valid ({policy} policy, {len(cases) - policy} quality)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Every expectation that needs no model: policy cases whole, quality cases' parse and gatekeeper."""
    console = Console()
    cases = _load(args.dirs, Console(stderr=True))
    if cases is None:
        return 2
    failures = 0
    for case in cases:
        if case.kind == "policy":
            evaluation, persisted = asyncio.run(run_case(case, scripted_verifier_for(case)))
            problems = policy_case_mismatches(case, evaluation) + invariant_violations(case, persisted)
        else:
            prepared = prepare(
                case.session.question,
                case.executor.emission(),
                case.session.tool_invocations,
                case.session.tool_trace_summary,
            )
            evaluation = conclude(prepared, VerifierCall(raw_reply=None, model="none", error="not called"))
            problems = deterministic_mismatches(case, evaluation) + label_consistency_problems(case)
        if problems:
            failures += 1
            console.print(f"[red]FAIL[/red] {case.id} ({case.kind})", highlight=False)
            for problem in problems:
                console.print(f"    {problem}", markup=False, highlight=False)
    console.print(f"{len(cases) - failures} of {len(cases)} cases agree with their deterministic expectations")
    return 1 if failures else 0
