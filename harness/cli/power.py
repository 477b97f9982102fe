"""`vbench power`: how many paired cases a difference needs, or how small a difference a corpus can detect."""

from __future__ import annotations

import argparse

from harness import UsageError
from harness.cli import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    power = sub.add_parser(
        "power",
        help="paired cases needed to detect a difference in a rate (McNemar, 80%% power), or the MDE of N cases",
    )
    what = power.add_mutually_exclusive_group(required=True)
    what.add_argument("--diff", type=float, metavar="PP", help="the difference to detect, in percentage points")
    what.add_argument(
        "--cases", type=int, metavar="N", help="paired cases available: print the smallest detectable difference"
    )
    power.add_argument(
        "--discordance",
        type=float,
        default=0.0,
        metavar="PP",
        help="expected share of cases the two sides answer differently, in points (default 0: the least it can be)",
    )
    power.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    power.add_argument("--power", type=float, default=0.8, help="the chance of a clear answer asked for (default 0.8)")
    power.set_defaults(handler=cmd_power)


def cmd_power(args: argparse.Namespace) -> int:
    from harness.score.intervals import cases_for_margin
    from harness.score.stats import cases_needed, mde_paired_binary

    if not (0 < args.alpha < 1 and 0 < args.power < 1 and 0 <= args.discordance <= 100):
        raise UsageError("--alpha and --power must lie in (0, 1), --discordance in [0, 100]")
    if args.diff is not None:
        if not 0 < args.diff <= 100:
            raise UsageError("--diff must lie in (0, 100] percentage points")
        n = cases_needed(args.diff / 100, args.discordance / 100, args.alpha, args.power)
        print(
            f"{n} paired cases detect a {args.diff:g} pp difference at {args.power:.0%} power, alpha {args.alpha:g}"
            f" (discordance {max(args.discordance, args.diff):g} pp"
            + (
                "; the fewest possible: two sides that disagree more often need more cases)"
                if args.discordance == 0
                else ")"
            )
        )
        ships = cases_for_margin(args.diff / 100, args.discordance / 100, alpha=args.alpha)
        print(
            f"{ships} paired cases let an equivalent candidate ship within a {args.diff:g} pp margin "
            f"(its {1 - args.alpha:.0%} interval, as the ship decision computes it, at {args.discordance:g} pp discordance)"
            if ships is not None
            else f"no corpus lets an equivalent candidate ship within a {args.diff:g} pp margin"
        )
        return EXIT_OK
    if args.cases <= 0:
        raise UsageError("--cases must be positive")
    mde = mde_paired_binary(args.cases, round(args.cases * args.discordance / 100), args.alpha, args.power)
    if mde is None:
        print(f"{args.cases} paired cases cannot detect any difference at {args.power:.0%} power")
        print(_ship_line(args.cases, args.discordance, args.alpha))
        return EXIT_OK
    print(
        f"{args.cases} paired cases detect differences of {mde * 100:.1f} pp or more at {args.power:.0%} power, alpha {args.alpha:g}"
    )
    print(_ship_line(args.cases, args.discordance, args.alpha))
    return EXIT_OK


def _ship_line(cases: int, discordance: float, alpha: float) -> str:
    """The smallest margin an equivalent candidate ships within on `cases` paired cases (the decision's interval)."""
    from harness.score.intervals import equal_sides_bound

    bound = equal_sides_bound(cases, discordance / 100, alpha=alpha)
    return (
        f"an equivalent candidate on {cases} paired cases ships only within a margin of {bound * 100:.1f} pp or more "
        f"(its {1 - alpha:.0%} interval, as the ship decision computes it, at {discordance:g} pp discordance)"
    )
