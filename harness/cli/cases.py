"""`vbench cases ...`: validate and check the corpus."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness import UsageError
from harness.cli import EXIT_GATE, EXIT_OK
from harness.corpus.generator import DEFAULT_COUNT, DEFAULT_PER_SEED, DEFAULT_RANDOM_SEED, generate, write_cases
from harness.corpus.loader import load_cases, load_cases_with_files
from harness.corpus.schema import case_json_schema
from harness.corpus.stats import ORIGINS, CorpusStats, KindCount, corpus_stats

DEFAULT_CASES = Path("cases")
DEFAULT_SCHEMA = DEFAULT_CASES / "case.schema.json"
DEFAULT_SEEDS = DEFAULT_CASES / "quality"
DEFAULT_GENERATED = DEFAULT_CASES / "generated"


CASE_DIRS_HELP = "case folders, searched recursively for *.yaml (default: cases)"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cases = sub.add_parser("cases", help="work with the case corpus")
    cases_sub = cases.add_subparsers(dest="cases_command", metavar="ACTION")
    validate = cases_sub.add_parser("validate", help="load every case strictly; errors name file and key path")
    validate.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_CASES], metavar="DIR", help=CASE_DIRS_HELP)
    validate.set_defaults(handler=cmd_validate)
    check = cases_sub.add_parser("check", help="run policy cases and the deterministic parts of quality cases")
    check.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_CASES], metavar="DIR", help=CASE_DIRS_HELP)
    check.set_defaults(handler=cmd_check)
    stats = cases_sub.add_parser("stats", help="counts by kind, class, verdict, tag, scenario; the coverage targets")
    stats.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_CASES], metavar="DIR", help=CASE_DIRS_HELP)
    stats.add_argument("--json", action="store_true", help="print the statistics as JSON")
    stats.add_argument(
        "--origin",
        action="append",
        choices=ORIGINS,
        help="count cases of this origin in the tables and targets (repeatable; default: hand-written)",
    )
    stats.add_argument(
        "--require-targets",
        action="store_true",
        help="exit 1 when a target is missed (with --spec: also a new scenario without a case, a changed or removed "
        "scenario, a stale requirement quote)",
    )
    stats.add_argument(
        "--spec",
        type=Path,
        metavar="DIR",
        help="read the scenarios from this OpenSpec tree (a repository holding openspec/, or openspec/ itself: its "
        "changes and archive) instead of the package's copy; report what moved",
    )
    stats.set_defaults(handler=cmd_stats)
    gen = cases_sub.add_parser("generate", help="mechanically labelled mutants of the seed quality cases")
    gen.add_argument(
        "--seeds", type=Path, action="append", help=f"seed case folder (repeatable; default {DEFAULT_SEEDS})"
    )
    gen.add_argument("--out", type=Path, default=DEFAULT_GENERATED, help="folder the gen-*.yaml files are replaced in")
    gen.add_argument("--seed", type=int, default=DEFAULT_RANDOM_SEED, help="random seed: same seed, same bytes")
    gen.add_argument(
        "--per-seed", type=int, default=DEFAULT_PER_SEED, help="at most this many mutants of each seed (stable)"
    )
    gen.add_argument(
        "--count", type=int, default=DEFAULT_COUNT, help="the fewest cases expected: exit 1 below it (no cap)"
    )
    gen.set_defaults(handler=cmd_generate)
    export = cases_sub.add_parser("export", help="write the corpus as Parquet and a Hugging Face dataset")
    export.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_CASES], metavar="DIR", help=CASE_DIRS_HELP)
    export.add_argument("--out", type=Path, required=True, help="folder for cases.parquet, claims.parquet, hf/")
    export.set_defaults(handler=cmd_export)
    schema = cases_sub.add_parser("schema", help="write the JSON Schema of case files (for editors)")
    schema.add_argument("--out", type=Path, default=DEFAULT_SCHEMA, help="file to write; '-' for stdout")
    schema.set_defaults(handler=cmd_schema)
    cases.set_defaults(handler=lambda _args: (cases.print_help(), 2)[1])


def _load(dirs: list[Path], with_files: bool = False):  # type: ignore[no-untyped-def]
    """The cases under `dirs`; a missing path or a bad case file is a `UsageError` (CorpusError names them all)."""
    missing = [d for d in dirs if not d.exists()]
    if missing:
        raise UsageError(f"no such path: {', '.join(map(str, missing))}")
    return load_cases_with_files(dirs) if with_files else load_cases(dirs)


def cmd_validate(args: argparse.Namespace) -> int:
    cases = _load(args.dirs)
    policy = sum(1 for c in cases if c.kind == "policy")
    Console().print(f"{len(cases)} cases valid ({policy} policy, {len(cases) - policy} quality)")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """Every expectation that needs no model: policy cases whole, quality cases' parse and gatekeeper."""
    from harness.run.conformance import case_check_problems

    console = Console()
    loaded = _load(args.dirs, with_files=True)
    cases = [case for case, _ in loaded]
    files = {case.id: file for case, file in loaded}
    failures = 0
    for case in cases:
        problems = case_check_problems(case)
        if problems:
            failures += 1
            console.print(f"[red]FAIL[/red] {files[case.id]} ({case.kind}, id {case.id})", highlight=False)
            for problem in problems:
                console.print(f"    {problem}", markup=False, highlight=False)
    console.print(f"{len(cases) - failures} of {len(cases)} cases agree with their deterministic expectations")
    return EXIT_GATE if failures else EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    """Mutants of the seed cases, written under --out; exit 1 if fewer than --count could be made."""
    from harness.run.conformance import quality_case_problems

    console = Console()
    seeds = _load(args.seeds or [DEFAULT_SEEDS])
    cases = generate(seeds, random_seed=args.seed, per_seed=args.per_seed, check=quality_case_problems)
    written = write_cases(cases, args.out)
    by_mutation = Counter(str(c.meta["mutation"]) for c in cases)
    used = len({c.meta["seed_id"] for c in cases})
    console.print(f"wrote {len(written)} cases from {used} seeds under {args.out} (random seed {args.seed})")
    for name, n in sorted(by_mutation.items()):
        console.print(f"  {name}: {n}", highlight=False)
    if len(cases) < args.count:
        console.print(f"[yellow]only {len(cases)}, fewer than --count {args.count}: add labelled seed cases[/yellow]")
        return EXIT_GATE
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from harness.corpus.export import claim_rows, write_export  # pyarrow and datasets: only here

    cases = _load(args.dirs)
    paths = write_export(cases, args.out)
    claims = sum(len(claim_rows(c)) for c in cases)
    Console().print(f"exported {len(cases)} cases and {claims} claims:", highlight=False)
    for name, path in paths.items():
        Console().print(f"  {name}: {path}", highlight=False)
    return EXIT_OK


def schema_text() -> str:
    """The case JSON Schema as committed: indented, keys in pydantic's order, newline-terminated."""
    return json.dumps(case_json_schema(), indent=2, ensure_ascii=False) + "\n"


def cmd_schema(args: argparse.Namespace) -> int:
    text = schema_text()
    if str(args.out) == "-":
        sys.stdout.write(text)
        return EXIT_OK
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    Console().print(f"wrote {args.out}", highlight=False)
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    """Counts and targets; exit 1 on a missed target only with --require-targets."""
    from harness.kit.spec_drift import SpecDirError, catalogue_for, drift_lines, resolve_spec_dir, spec_drift

    cases = _load(args.dirs)
    try:
        catalogue = catalogue_for(args.spec)
        drift = spec_drift(resolve_spec_dir(args.spec), cases) if args.spec is not None else None
    except SpecDirError as exc:
        raise UsageError(str(exc)) from None
    stats = corpus_stats(cases, catalogue, counted=tuple(args.origin or ["hand-written"]))
    if args.json:
        data = stats.model_dump(mode="json")
        if drift is not None:
            data["spec_drift"] = drift.model_dump(mode="json")
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        render_stats(stats, Console())
        if drift is not None:
            lines = drift_lines(drift) or [f"{drift.spec_dir}: the scenarios and quoted requirements are the package's"]
            for line in lines:
                Console().print(line, highlight=False, markup=False, soft_wrap=True)
    missed = not stats.targets_met or (drift is not None and not drift.clean)
    return EXIT_GATE if args.require_targets and missed else EXIT_OK


def render_stats(stats: CorpusStats, console: Console) -> None:
    """The statistics as rich tables."""
    console.print(
        f"{stats.total} cases loaded; counting {', '.join(stats.counted)}: "
        f"{stats.by_kind.policy} policy, {stats.by_kind.quality} quality",
        highlight=False,
    )
    console.print(_kind_table("origin", stats.by_origin))
    for title, rows in (("gold labels (quality)", stats.labels), ("expected verdicts (quality)", stats.verdicts)):
        table = Table(title=title, title_justify="left")
        for col in ("class", "sole", "any of", "weighted", "share", "policy cases"):
            table.add_column(col, justify="left" if col == "class" else "right")
        for r in rows:
            table.add_row(r.key, str(r.sole), str(r.any_of), f"{r.weighted:g}", f"{r.share:.1%}", str(r.policy))
        console.print(table)
    claims = ", ".join(f"{n}: {k}" for n, k in stats.claims_per_case.items()) or "none"
    console.print(f"claims per quality case (count: cases): {claims}", highlight=False)
    console.print(_kind_table("incident kind", stats.incident_kinds))
    console.print(_kind_table("adversarial category", stats.adversarial))
    if stats.unknown_adversarial_tags:
        console.print(f"[yellow]unknown adversarial tags:[/yellow] {', '.join(stats.unknown_adversarial_tags)}")
    console.print(_kind_table("tag", stats.tags))
    if stats.mutations:
        console.print(_kind_table("mutation (generated)", stats.mutations))
    table = Table(title="scenarios", title_justify="left")
    for col in ("scenario", "policy", "quality", "generated", "external"):
        table.add_column(col, justify="left" if col == "scenario" else "right", overflow="fold")
    for s in stats.scenarios:
        style = "red" if s.id in stats.uncovered or s.id in stats.unknown_scenarios else None
        table.add_row(
            s.id.split("/", 1)[-1], str(s.policy), str(s.quality), str(s.generated), str(s.external), style=style
        )
    console.print(table)
    if stats.uncovered:
        console.print(f"[red]uncovered scenarios ({len(stats.uncovered)}):[/red]")
        for sid in stats.uncovered:
            console.print(f"  {sid}", highlight=False)
    table = Table(title="targets", title_justify="left")
    for col in ("target", "", "falls short"):
        table.add_column(col, overflow="fold")
    for t in stats.targets:
        mark = "[green]met[/green]" if t.met else "[red]short[/red]"
        table.add_row(f"{t.name}\n[dim]{t.description}[/dim]", mark, "\n".join(t.shortfalls))
    console.print(table)


def _kind_table(title: str, rows: list[KindCount]) -> Table:
    table = Table(title=f"by {title}", title_justify="left")
    for col in (title, "policy", "quality", "total"):
        table.add_column(col, justify="left" if col == title else "right")
    for r in rows:
        table.add_row(r.key, str(r.policy), str(r.quality), str(r.total))
    return table
