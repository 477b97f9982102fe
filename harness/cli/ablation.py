"""`python -m harness.cli.ablation` (`nox -s ablation`): the reference baseline with each signal removed.

For the full baseline and for each signal switched off, it runs every case through the whole system (the
policy included) and prints claim accuracy, unsafe-PASS and macro-F1 on the development and held-out splits
of the hand-written quality cases, and unsafe-PASS and grounding balanced accuracy on HaluEval QA part 1
(development data). A signal earns its lines when removing it makes the held-out figures worse.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from harness import UsageError
from harness.baselines.reference import SIGNALS, ReferenceSettings, ReferenceVerifier
from harness.cli import Exit, usage_error
from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.corpus.splits import split_of
from harness.run.execute import execute_case
from harness.run.log import ResultRecord
from harness.run.records import record_from_run
from harness.system.store import Store

QUALITY = Path("cases/quality")
HALUEVAL = Path("cases/external/halueval-qa")
COLUMNS = ("dev acc", "dev unsafe", "dev F1", "held acc", "held unsafe", "held F1", "halu unsafe", "halu BAcc")


async def _records(cases: Sequence[Case], settings: ReferenceSettings) -> list[ResultRecord]:
    """Every case through the whole system (one store, emptied per case, as a runner worker does)."""
    verifier = ReferenceVerifier(settings)
    store = Store()
    try:
        return [record_from_run(c, "reference", 1, await execute_case(c, verifier, store=store)) for c in cases]
    finally:
        store.close()


def figures(records: Sequence[ResultRecord]) -> dict[str, float | None]:
    """Claim accuracy, macro-F1, unsafe-PASS and grounding balanced accuracy, as `vbench run` scores them."""
    from harness.score.frames import claims_frame, quality_frame
    from harness.score.registry import Frames, metric

    frames = Frames(quality_frame(records), claims_frame(records))
    return {
        k: metric(k).compute(frames, False).value
        for k in ("claim_accuracy", "macro_f1", "unsafe_pass_rate", "grounding_bacc")
    }


def row(quality: Sequence[Case], halueval: Sequence[Case], settings: ReferenceSettings) -> dict[str, float | None]:
    q = asyncio.run(_records(quality, settings))
    dev = figures([r for r in q if split_of(r.case_id) == "development"])
    held = figures([r for r in q if split_of(r.case_id) == "held-out"])
    halu = figures(asyncio.run(_records(halueval, settings))) if halueval else {}
    values = (
        dev["claim_accuracy"], dev["unsafe_pass_rate"], dev["macro_f1"],
        held["claim_accuracy"], held["unsafe_pass_rate"], held["macro_f1"],
        halu.get("unsafe_pass_rate"), halu.get("grounding_bacc"),
    )  # fmt: skip
    return dict(zip(COLUMNS, values, strict=True))


def ablation(quality: Sequence[Case], halueval: Sequence[Case]) -> dict[str, dict[str, float | None]]:
    """`full` and `-<signal>` for every registered signal."""
    full = ReferenceSettings()
    table = {"full": row(quality, halueval, full)}
    for signal_id in SIGNALS:
        table[f"-{signal_id}"] = row(quality, halueval, full.without(signal_id))
    return table


def render(table: dict[str, dict[str, float | None]]) -> str:
    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    lines = ["| variant | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(cell(v) for v in values.values()) + " |" for name, values in table.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cli.ablation", description=__doc__.splitlines()[0])
    parser.add_argument("--quality", type=Path, default=QUALITY, help="hand-written quality cases (split by id)")
    parser.add_argument("--halueval", type=Path, default=HALUEVAL, help="HaluEval QA part 1 cases (development)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    try:
        return _ablation(args)
    except UsageError as exc:  # a bad case folder (`CorpusError`), or cases that do not fill both splits
        return usage_error(exc)


def _ablation(args: argparse.Namespace) -> Exit:
    quality = [c for c in load_cases([args.quality]) if c.kind == "quality"]
    halueval = load_cases([args.halueval]) if args.halueval.exists() else []
    splits = {split_of(c.id) for c in quality}
    if splits != {"development", "held-out"}:
        raise UsageError(f"{args.quality}: the quality cases must fill both splits, got {sorted(splits)}")
    if not halueval:
        print(f"{args.halueval}: no HaluEval cases; its columns are left empty", file=sys.stderr)
    table = ablation(quality, halueval)
    print(render(table))
    if args.json:
        args.json.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return Exit.OK


if __name__ == "__main__":
    raise SystemExit(main())
