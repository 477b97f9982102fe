"""`vbench estimate DIR`: the production verifier's rates over all imported sessions from the labelled ones and a
judge's answers on every session (PPI++); writes DIR/estimate.json and DIR/estimate.md (the report's section)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import UsageError
from harness.cli import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    est = sub.add_parser("estimate", help="production rates over all imported sessions, with PPI++ intervals")
    est.add_argument("folder", type=Path, help="the folder `vbench import sessions` wrote, partly labelled")
    est.add_argument(
        "--judge",
        required=True,
        help="RUN_DIR: a finished `vbench run` over the same sessions; or `reference`: the offline reference "
        "verifier, run here",
    )
    est.add_argument("--variant", help="the run's variant to take as the judge (when it holds several)")
    est.add_argument("--half-width", type=float, default=0.02, help="the half-width to plan for (default 0.02)")
    est.add_argument("--strata", choices=["spec", "none"], default="none",
                     help="stratify by the session's first scenario id (its incident kind)")  # fmt: skip
    est.set_defaults(handler=cmd_estimate)


def cmd_estimate(args: argparse.Namespace) -> int:
    from harness.corpus.sessions import load_imported
    from harness.score.estimate import estimate, judge_from_run, judge_reference, write_estimate

    if not args.folder.is_dir():
        raise UsageError(f"no such folder: {args.folder}")
    if not 0 < args.half_width < 1:
        raise UsageError(f"--half-width {args.half_width}: a fraction between 0 and 1")
    try:
        cases = load_imported(args.folder)
        if not cases:
            raise ValueError(f"{args.folder} holds no imported session (*.yaml); run `vbench import sessions` first")
        if args.judge == "reference":
            judge, name = judge_reference(cases), "reference"
        else:
            judge, name = judge_from_run(Path(args.judge), args.variant), str(args.judge)
        strata = {c.id: (c.spec[0] if c.spec else "-") for c in cases} if args.strata == "spec" else None
        report = estimate(args.folder, judge, name, args.half_width, strata=strata)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    path = write_estimate(report, args.folder)
    for line in report.lines():
        print(line)
    print(f"wrote {path}")
    return EXIT_OK
