"""`vbench run` (the main job) and `vbench compare`."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console

from harness import UsageError
from harness.app.finish import Finisher
from harness.app.phases import CONSOLE, LOAD_CASES, RUN, phase
from harness.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE, history_flags
from harness.cli.client_flags import add_client_flags, apply_client_flags
from harness.cli.console import print_summary
from harness.corpus.perturb import PERTURBATIONS
from harness.run.caseref import CaseRef
from harness.run.endpoints import check_endpoints
from harness.run.folder import DROPPED_FILE, RESULTS_FILE, RunFileError
from harness.run.gates import Gates
from harness.run.looks import EarlyStop
from harness.run.providers import grammar, study_factory, warm_imports
from harness.run.runner import run_study
from harness.run.select import load_case_refs
from harness.run.study import DEFAULT_MARGIN_PP, Study, build_study, load_study_file
from harness.score.gates import check_gate_names, parse_gate
from harness.score.registry import decidable


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = sub.add_parser(
        "run", help="run the corpus through the system and score it (offline reference verifier by default)"
    )
    run.add_argument(
        "--study", type=Path, help="a study file (TOML or YAML; default: vbench.toml when present); flags override it"
    )
    run.add_argument("--cases", type=Path, action="append", help="case folder (repeatable; default: cases)")
    run.add_argument("--model", action="append", help=f"{grammar()} (repeatable; default: reference)")
    run.add_argument("--prompt", action="append", help="prompt variant (repeatable; default: baseline)")
    run.add_argument("--epochs", type=int, help="times each quality case is asked, per variant (default 1)")
    run.add_argument("--concurrency", type=int, help="cases in flight at once, over every variant (default 8)")
    run.add_argument("--out", type=Path, help="run folder (default: reports/<timestamp>)")
    cache = run.add_mutually_exclusive_group()
    cache.add_argument("--cache", type=Path, help="response cache folder (default: .cache/responses)")
    cache.add_argument("--no-cache", action="store_true", help="send every request")
    run.add_argument(
        "--no-replay",
        action="store_true",
        help="run the system on every case even where an identical earlier result is cached (replies stay cached)",
    )
    run.add_argument(
        "--resume", action="store_true", help="finish an interrupted run in --out without redoing finished work"
    )
    run.add_argument(
        "--drop-corrupt",
        action="store_true",
        help="with --resume: take corrupt lines out of results.jsonl (kept in results.dropped.jsonl) and redo their cases",
    )
    run.add_argument(
        "--baseline",
        type=Path,
        help="an earlier run folder, or a committed baseline with summary.json + outcomes.jsonl",
    )
    run.add_argument(
        "--control",
        metavar="VARIANT",
        help="the control variant (of this run, or of --baseline); every other variant is a candidate against it. "
        "'@PROMPT' names, per model, its variant with that prompt",
    )
    run.add_argument(
        "--margin",
        type=float,
        metavar="PP",
        help="non-inferiority margin of the ship decision in percentage points (default 5)",
    )
    run.add_argument(
        "--decide-on",
        action="append",
        choices=decidable(),
        help="a metric the ship decision gates on (repeatable; default verdict_accuracy and unsafe_pass_rate)",
    )
    run.add_argument(
        "--stop-early",
        action="store_true",
        help="send quality cases in a seeded random order, in looks, and stop once the sequential rule blocks, "
        "ships or finds a ship out of reach (needs --control or --baseline; docs/concepts/decisions.md)",
    )
    run.add_argument(
        "--look-size", type=int, metavar="N", help="with --stop-early: quality cases per look (default 20)"
    )
    run.add_argument(
        "--require-ship", action="store_true", help="an inconclusive decision exits 1 too (proof of non-inferiority)"
    )
    run.add_argument(
        "--all-pairs",
        action="store_true",
        help="decide every pair of variants; by default past six variants each is decided against the control and "
        "all are ranked (multiple comparisons with the best)",
    )
    run.add_argument(
        "--fail-under", action="append", default=[], metavar="METRIC=VALUE", help="gate, e.g. verdict_accuracy=0.8"
    )
    run.add_argument("--max-unsafe-pass", type=float, help="gate on the false-accept rate, e.g. 0.02")
    run.add_argument(
        "--max-error-rate", type=float, help="share of quality cases allowed to get no model reply (default 0)"
    )
    run.add_argument(
        "--filter",
        action="append",
        default=None,
        metavar="F",
        help="tag:T, scenario:S, id:GLOB, ids:FILE, kind:K, or a bare id glob/tag",
    )
    run.add_argument("--excerpt-chars", type=int, help="tool result excerpt limit in the trace summary")
    run.add_argument(
        "--case-timeout",
        type=float,
        metavar="SECONDS",
        help="bound on one case over all its attempts; a case past it is recorded as a case_timeout error",
    )
    run.add_argument("--no-claim-guard", action="store_true", help="measure the bare model verdict (policy step 5 off)")
    run.add_argument("--no-report", action="store_true", help="skip the HTML report")
    run.add_argument(
        "--store",
        metavar="URL",
        help="where the system persists: a SQLAlchemy URL, postgresql://user@host:port/db, or a SQLite file path "
        "(default: a private in-memory SQLite per worker)",
    )
    run.add_argument(
        "--perturb",
        action="append",
        metavar="NAME[,NAME]",
        help="also run every quality case under these perturbations (robustness only; see docs/manual/everyday-use.md): "
        + ", ".join(PERTURBATIONS),
    )
    run.add_argument("--perturb-seed", type=int, help="the run seed the perturbations derive from")
    scale = run.add_argument_group("scale-out (docs/manual/scale-out.md)")
    scale.add_argument(
        "--shard", metavar="I/N", help="run only shard I of N of the work units; `vbench merge` joins them"
    )
    scale.add_argument("--executor", choices=["local", "ray"], help="where work units run (default: local)")
    scale.add_argument("--ray-address", help="the Ray cluster to join (default: a local one for this run)")
    client = run.add_argument_group(
        "client settings for the models that take them (a study file can set them per model)"
    )
    add_client_flags(client)
    history_flags.add_run_flags(run)
    run.set_defaults(handler=cmd_run)

    comp = sub.add_parser("compare", help="paired comparison of two finished runs")
    comp.add_argument("run_a", type=Path, metavar="RUN_A", help="the control's run folder")
    comp.add_argument("run_b", type=Path, metavar="RUN_B", help="the candidate's run folder")
    comp.add_argument("--json", type=Path, help="also write the comparison rows as JSON")
    comp.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a variant of the second run is blocked against the first (significantly worse)",
    )
    comp.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    comp.add_argument(
        "--margin", type=float, default=DEFAULT_MARGIN_PP, metavar="PP",
        help=f"non-inferiority margin in percentage points, as the run's decisions (default {DEFAULT_MARGIN_PP:g})",
    )  # fmt: skip
    comp.set_defaults(handler=cmd_compare)


DEFAULT_STUDY = Path("vbench.toml")
"""The study `vbench run` reads when no --study is given and this file is in the current folder (`vbench init`)."""


def study_from_args(args: argparse.Namespace) -> Study:
    if args.study is None and DEFAULT_STUDY.is_file():
        args.study = DEFAULT_STUDY
    file_data = load_study_file(args.study) if args.study else {}
    gates: dict[str, Any] = {}
    if args.fail_under:
        gates["fail_under"] = dict(parse_gate(g) for g in args.fail_under)
    if args.max_unsafe_pass is not None:
        gates["max_unsafe_pass"] = args.max_unsafe_pass
    if args.max_error_rate is not None:
        gates["max_error_rate"] = args.max_error_rate
    if args.margin is not None:
        gates["margin"] = args.margin
    if args.require_ship:
        gates["require_ship"] = True
    if args.all_pairs:
        gates["all_pairs"] = True
    if args.decide_on:
        gates["decide_on"] = args.decide_on
    overrides: dict[str, Any] = {
        "cases": args.cases,
        "models": args.model,
        "prompts": args.prompt,
        "epochs": args.epochs,
        "concurrency": args.concurrency,
        "out": args.out,
        "cache": args.cache,
        "resume": args.resume or None,
        "drop_corrupt": args.drop_corrupt or None,
        "baseline": args.baseline,
        "control": args.control,
        "filters": args.filter,
        "excerpt_chars": args.excerpt_chars,
        "case_timeout": args.case_timeout,
        "store": args.store,
        "claim_guard": False if args.no_claim_guard else None,
        "report": False if args.no_report else None,
        "replay": False if args.no_replay else None,
        "gates": gates or None,
        "perturb": args.perturb,
        "perturb_seed": args.perturb_seed,
        "shard": args.shard,
        "executor": args.executor,
        "ray_address": args.ray_address,
        "stop_early": args.stop_early or None,
        "look_size": args.look_size,
    }
    if args.no_cache:
        overrides["cache"] = None
        file_data = {**file_data, "cache": None}
    study = build_study(file_data, overrides, source=str(args.study) if args.study else "flags")
    check_gate_names(study.gates.fail_under, str(args.study) if args.study else "flags", study.gates.decide_on)
    return apply_client_flags(study, args)


default_factory = study_factory  # the name the tests and scripts know


def cmd_run(args: argparse.Namespace) -> int:
    console, err = (
        Console(width=None if Console().is_terminal else 160, emoji=False),
        Console(stderr=True, soft_wrap=True, emoji=False),
    )
    # every bad input raises a UsageError, and a fault that stops the run `RunStopped`: `main` maps them
    try:
        study = study_from_args(args)
        # one case in memory at a time: the run keeps each as a compact ref (memory stays flat in the run's size)
        # while worker processes read the cases, this process imports the verifiers' client libraries
        with phase(LOAD_CASES):
            cases, corpus_policy = load_case_refs(study.cases, study.filters, partial(warm_imports, study.models))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    if not cases:
        raise UsageError("no case matches the given folders and filters")
    study = history_flags.apply(study, cases, args)  # history refs become baseline folders
    _preflight(study, cases)
    check_endpoints(study)  # a missing key or an endpoint that does not answer stops here, before any case
    run_dir = study.out or Path("reports") / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    from harness.cli.progress import RichProgress

    early, alpha = _early_stop(study, cases, run_dir)
    settings = study.gate_settings(alpha)
    finisher = Finisher(study.report)
    try:
        with phase(RUN):
            result = run_study(
                study, cases, run_dir, default_factory(study), RichProgress(err), early_stop=early,
                on_start=finisher.start,
            )  # fmt: skip
        del cases
        finished = finisher.finish(run_dir, settings, result.manifest, corpus_policy)
    except RunFileError as exc:
        if exc.path.name == RESULTS_FILE and exc.line:
            hint = "pass --resume --drop-corrupt to take the corrupt lines out and redo their cases"
            raise UsageError(f"{exc}\n  {hint}") from None
        raise
    if result.dropped:
        lines = ", ".join(map(str, result.dropped))
        err.print(
            f"dropped corrupt line(s) {lines} of {run_dir / RESULTS_FILE} (kept in {DROPPED_FILE})", highlight=False
        )
    summary = finished.summary
    err.print(f"{finished.headline} · certificate: {run_dir / 'certificate.html'}", highlight=False, markup=False)
    with phase(CONSOLE):
        print_summary(console, summary, run_dir, result.skipped, report=study.report)
    if not history_flags.record_finished(study, run_dir, err):
        return EXIT_USAGE
    return EXIT_OK if summary.passed else EXIT_GATE


def _preflight(study: Study, cases: list[CaseRef]) -> None:
    """Every candidate has a control and shares cases with it, before any request is sent (PairingError: exit 2)."""
    if study.control is None and study.baseline is None:
        return
    from harness.run.plan import build_variants
    from harness.score.regression import load_control_run, preflight

    baseline = load_control_run(study.baseline) if study.baseline is not None else None
    quality = {c.id: c.hash for c in cases if c.kind == "quality"}
    preflight(build_variants(study), study.control, baseline, quality)


def _early_stop(study: Study, cases: list[CaseRef], run_dir: Path) -> tuple[EarlyStop | None, float]:
    """With stop_early: the sequential rule the run checks after each look, and the level its decisions are made
    at (the design's last look, so the summary's decision and the stop agree). Else none, and the study's alpha."""
    if not study.stop_early:
        return None, study.gates.alpha
    from harness.score.early_stop import final_level, run_rule

    quality = [c.id for c in cases if c.kind == "quality"]
    gates = study.gates
    rule = run_rule(
        run_dir, quality, look_size=study.look_size, seed=study.stop_seed, control=study.control,
        baseline=study.baseline, gated=tuple(gates.decide_on), margin=gates.margin_fraction, alpha=gates.alpha,
    )  # fmt: skip
    return rule, final_level(len(set(quality)), study.look_size, gates.alpha)


def cmd_compare(args: argparse.Namespace) -> int:
    """Two finished runs paired by case: figures in points, a conclusion per pair, what differs between them."""
    from harness.cli.console import print_comparisons
    from harness.run.folder import MANIFEST_FILE, read_manifest
    from harness.score.compare import compare_runs
    from harness.score.outcomes import load_outcomes

    err = Console(stderr=True, soft_wrap=True, emoji=False)
    console = Console(width=None if Console().is_terminal else 160)
    for path in (args.run_a, args.run_b):
        if not path.exists():
            raise UsageError(f"no such run folder: {path}")
    try:
        gates = Gates(margin=args.margin, alpha=args.alpha)
        rows = compare_runs(
            load_outcomes(args.run_a), load_outcomes(args.run_b), margin=gates.margin_fraction, alpha=gates.alpha
        )
    except (FileNotFoundError, ValidationError) as exc:  # a folder without its outcomes, a bad margin
        raise UsageError(str(exc)) from None
    if not rows:
        raise UsageError(
            f"no variant of {args.run_a} could be paired with one of {args.run_b} "
            "(pairs need the same variant name, or one variant in each run)"
        )
    manifests = [read_manifest(p) if (p / MANIFEST_FILE).exists() else None for p in (args.run_a, args.run_b)]
    worse = print_comparisons(console, rows, args.run_a, args.run_b, manifests[0], manifests[1])
    if args.json:
        args.json.write_text(json.dumps([r.to_json() for r in rows], indent=2) + "\n", encoding="utf-8")
    if args.fail_on_regression and worse:
        err.print(f"regression: {', '.join(worse)} significantly worse in {args.run_b}", highlight=False)
        return EXIT_GATE
    return EXIT_OK
