"""`vbench run` (the main job) and `vbench compare`."""

from __future__ import annotations

import argparse
import json
import os
import pickle
import select
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from rich.console import Console

from harness import UsageError
from harness.cli import EXIT_GATE, EXIT_OK
from harness.cli.client_flags import add_client_flags, apply_client_flags
from harness.cli.console import print_summary
from harness.corpus.forks import Forked, may_fork
from harness.corpus.perturb import PERTURBATIONS
from harness.run.caseref import CaseRef
from harness.run.endpoints import check_endpoints
from harness.run.folder import DROPPED_FILE, RESULTS_FILE, ResultsFollower, RunFileError, parse_record
from harness.run.gates import Gates, GateSettings
from harness.run.log import Manifest, ResultRecord
from harness.run.looks import EarlyStop
from harness.run.providers import grammar, import_ahead, study_factory, warm_imports
from harness.run.runner import run_study
from harness.run.select import load_case_refs
from harness.run.study import DEFAULT_MARGIN_PP, Study, build_study, load_study_file
from harness.score.gates import check_gate_names, parse_gate
from harness.score.registry import decidable

if TYPE_CHECKING:
    from harness.corpus.schema import Case
    from harness.report.casedata import CaseShown
    from harness.score.scoring import RunScorer


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
    run.add_argument("--epochs", type=int)
    run.add_argument("--concurrency", type=int)
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
    run.set_defaults(handler=cmd_run)

    comp = sub.add_parser("compare", help="paired comparison of two finished runs")
    comp.add_argument("run_a", type=Path)
    comp.add_argument("run_b", type=Path)
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
        cases, corpus_policy = load_case_refs(study.cases, study.filters, partial(warm_imports, study.models))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    if not cases:
        raise UsageError("no case matches the given folders and filters")
    _preflight(study, cases)
    check_endpoints(study)  # a missing key or an endpoint that does not answer stops here, before any case
    run_dir = study.out or Path("reports") / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    from harness.cli.progress import RichProgress

    early, alpha = _early_stop(study, cases, run_dir)
    settings = study.gate_settings(alpha)
    apart = FinishApart.fork(run_dir, settings, corpus_policy, study.excerpt_chars, cases, study.report)
    preload = Preload(() if apart is not None else AFTER_RUN_MODULES + (REPORT_MODULES if study.report else ()))
    scoring = ScoreAsItGoes(preload, study.excerpt_chars, {c.id: c for c in cases}) if apart is None else None
    views = CaseViewsAsItGoes(preload, study.excerpt_chars) if study.report and apart is None else None

    def on_record(record: ResultRecord, case: Case | None) -> None:
        if scoring is not None:
            scoring(record, case)
        if views is not None:
            views(record, case)

    try:
        with apart if apart is not None else nullcontext():  # a run that fails stops the child
            result = run_study(
                study, cases, run_dir, default_factory(study), RichProgress(err), early_stop=early,
                on_record=on_record if apart is None else None,
                on_start=apart.started if apart is not None else preload.start,
            )  # fmt: skip
            del cases  # the scorer keeps the cases as compact refs, each validated once while it is in use
            finished = apart.finished(result.manifest) if apart is not None else None
            if finished is None:  # no child, or it ended without a result: the same work here
                preload.join()
                finished = finish_run(
                    run_dir, settings, result.manifest, corpus_policy, study.report,
                    scoring.finish() if scoring is not None else None, views.views if views is not None else None,
                )  # fmt: skip
        summary, headline = finished
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
    err.print(f"{headline} · certificate: {run_dir / 'certificate.html'}", highlight=False, markup=False)
    print_summary(console, summary, run_dir, result.skipped, report=study.report)
    return EXIT_OK if summary["passed"] else EXIT_GATE


def finish_run(
    run_dir: Path,
    settings: GateSettings,
    manifest: Manifest,
    corpus_policy: int,
    report: bool,
    scored: RunScorer | None = None,
    case_views: dict[str, CaseShown] | None = None,
) -> tuple[dict[str, Any], str]:
    """What `vbench run` does once its records are written: score the folder (summary.json, outcomes, junit), write
    the certificate and, with `report`, the HTML report; the summary and the certificate's headline. `scored` and
    `case_views`: what was made of the records while the run wrote them (None: made here from the folder)."""
    summary = score_run(run_dir, settings, scored)
    from harness.kit.certificate import write_run_certificate

    headline = write_run_certificate(run_dir, manifest, summary, corpus_policy).headline
    if report:
        _render_report(run_dir, summary, manifest, case_views)
    return summary, headline


class FinishApart:
    """`finish_run` in a forked child that follows the run as it goes, on the core the run leaves idle.

    The run waits on its replies most of the time, but its event loop is one thread: scoring each record as it is
    written, making its case's drill-down view and importing what scoring and the report need (pandas, jinja2) all
    took the GIL from it, and delayed the replies it was handling. The child is forked after the cases are loaded
    (it has them without pickling), imports those modules, then reads each record the run appends to results.jsonl
    (`ResultsFollower`) and does that work there. When the run ends, the parent sends the run's manifest; the child
    scores, writes the certificate and the report, and sends back the summary and headline. The files are those
    the parent would write (`finish_run` either way); a child that fails or is killed leaves the whole of it to the
    parent (`finished` is None), so an error is raised there as it always was.

    Control pipe, parent to child: one byte when the run starts writing (`started`: reading results.jsonl before
    then could meet a file `--resume --drop-corrupt` rewrites), then the pickled manifest, then end of file."""

    def __init__(self, control: int, forked: Forked[tuple[dict[str, Any], str]]) -> None:
        self._control: int | None = control
        self._forked = forked
        self._started = False

    @classmethod
    def fork(
        cls, run_dir: Path, settings: GateSettings, corpus_policy: int, excerpt_chars: int,
        cases: Sequence[CaseRef], report: bool,
    ) -> FinishApart | None:  # fmt: skip
        """The child, when forking is safe here (`may_fork`) and the system lets this process fork; else None, and
        the run scores in this process."""
        if not may_fork():
            return None
        read, write = os.pipe()
        try:
            refs = {c.id: c for c in cases}
            forked = Forked(
                _follow_and_finish, read, write, run_dir, settings, corpus_policy, excerpt_chars, refs, report
            )
        except OSError:  # no process to spare (EAGAIN, ENOMEM): the run is scored here
            os.close(write)
            return None
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        return cls(write, forked)

    def started(self) -> None:
        """The run is about to append its records (`run_study`'s `on_start`)."""
        self._send(b"S")

    def finished(self, manifest: Manifest) -> tuple[dict[str, Any], str] | None:
        """The child's summary and headline, once it has scored the run that wrote `manifest`; None when it has
        none (the caller does `finish_run` itself)."""
        if not self._started:
            self.started()
        self._send(pickle.dumps(manifest, protocol=pickle.HIGHEST_PROTOCOL))
        self._close()
        return self._forked.result_or_none()

    def cancel(self) -> None:
        self._close()
        self._forked.cancel()

    def __enter__(self) -> FinishApart:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:
            self.cancel()

    def _send(self, data: bytes) -> None:
        self._started = True
        if self._control is None:
            return
        try:
            with memoryview(data) as rest:
                while rest:
                    rest = rest[os.write(self._control, rest) :]
        except OSError:  # the child is gone: `result` says so, and the parent does the work
            self._close()

    def _close(self) -> None:
        if self._control is not None:
            os.close(self._control)
            self._control = None


FOLLOW_EVERY_S = 0.05
"""How often the finishing child reads what the run appended, at most (it wakes at once when the run ends)."""


def _follow_and_finish(
    control: int,
    parent_end: int,
    run_dir: Path,
    settings: GateSettings,
    corpus_policy: int,
    excerpt_chars: int,
    cases: dict[str, CaseRef],
    report: bool,
) -> tuple[dict[str, Any], str]:
    """The finishing child's work (`FinishApart`)."""
    os.close(parent_end)  # else the control pipe never ends
    imported = Preload(AFTER_RUN_MODULES + (REPORT_MODULES if report else ()))
    imported.join()
    from harness.run.runlog import CaseCache
    from harness.score.headline import is_headline

    scoring = ScoreAsItGoes(imported, excerpt_chars, cases)
    views = CaseViewsAsItGoes(imported, excerpt_chars) if report else None
    case_of = CaseCache(cases).get
    follower = ResultsFollower(run_dir / RESULTS_FILE)
    received: list[bytes] = []
    started = ended = False
    while not ended:
        if select.select([control], [], [], FOLLOW_EVERY_S)[0]:
            data = os.read(control, 1 << 16)
            received.append(data)
            started, ended = True, not data
        following = not scoring.failed or (views is not None and not views.failed)
        for line in follower.new_lines() if started and following else ():
            try:
                record = parse_record(line)
            except ValueError:  # the folder is scored after the run instead, where the line is named
                scoring.failed = True
                if views is not None:
                    views.failed = True
                break
            case = case_of(record.case_id) if is_headline(record) else None
            scoring(record, case)
            if views is not None:
                views(record, case)
    follower.close()
    message = b"".join(received)
    if not message.startswith(b"S"):
        raise RuntimeError("the run ended before it started")
    manifest = pickle.loads(message[1:])  # noqa: S301 - our own parent's bytes, through a pipe only it and we hold
    return finish_run(
        run_dir, settings, manifest, corpus_policy, report, scoring.finish(), views.views if views is not None else None
    )


AFTER_RUN_MODULES = ("harness.score.scoring", "harness.kit.certificate")
"""What scoring and the certificate import (pandas, the kit's server)."""


def _render_report(
    run_dir: Path, summary: dict[str, Any], manifest: Manifest, case_views: dict[str, CaseShown] | None = None
) -> None:
    """report.html and summary.md of the run just scored, from the summary, manifest and drill-down cases in memory
    (nothing is read back or scored again); one that cannot be written is a `ReportError` that fails the command.
    A function of its own so the bench can time the report as one phase."""
    from harness.report.render import render_scored

    render_scored(run_dir, summary, manifest=manifest, case_views=case_views)


REPORT_MODULES = ("harness.report.render", "harness.report.figures")
"""What the HTML report imports (jinja2, the summary models)."""


class Preload:
    """Modules imported on a daemon thread while the run waits on its replies; `join` before using them.

    Where the run has no finishing child (`FinishApart`: one core, not Linux, another thread running), it scores
    and reports in its own process. It spends most of its time waiting on replies, and without this the imports
    that scoring and the report need would start only after the last reply, on the critical path of what a user
    waits for. The thread starts when the run's first requests go out (`run_study`'s
    `on_start`), not before: started earlier, it took the GIL from the imports and set-up the first request
    waits for. Joining before use means no module is ever imported by two threads at once; a preload never
    started imports in the joining thread. A failed import is left for the real one to raise, where it is used.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.thread = threading.Thread(target=self._work, name="vbench-preload", daemon=True)
        self.done = False

    def start(self) -> None:
        self.thread.start()

    def loading(self) -> bool:
        """True until the modules are imported (and while the thread has not started yet)."""
        return not self.done

    def join(self) -> None:
        if self.thread.ident is None:
            self._work()
        else:
            self.thread.join()

    def _work(self) -> None:
        import_ahead(self.names)
        self.done = True


def score_run(run_dir: Path, settings: GateSettings, scored: RunScorer | None = None) -> dict[str, Any]:
    """`harness.score.scoring.score_run`, imported when first needed (pandas stays out of start-up)."""
    from harness.score.scoring import score_run as score

    return score(run_dir, settings, scored)


class ScoreAsItGoes:
    """The run's records checked against their cases as they are written (`RunScorer.add`, with the case the run
    held), so that scoring after the run reads no case again. Scoring's modules load on the preload thread meanwhile: until they have, records wait here
    (no module is imported by two threads at once), and the first record after scores those that waited.

    Scoring never stops the run: a record it cannot score drops the scorer, and the folder is scored after the run
    as it always was (where the same error is then raised, with every result already written)."""

    def __init__(self, preload: Preload, excerpt_chars: int, cases: dict[str, CaseRef]) -> None:
        self.preload, self.excerpt_chars, self.cases = preload, excerpt_chars, cases
        self.scorer: RunScorer | None = None
        self.waiting: list[ResultRecord] = []
        self.failed = False

    def __call__(self, record: ResultRecord, case: Case | None = None) -> None:
        if self.failed:
            return
        if self.scorer is None and self.preload.loading():
            self.waiting.append(record)  # not its case: an offline run may write thousands before the preload ends
            return
        try:
            self._scorer().add(record, case)
        except Exception:  # the folder is scored after the run instead, where the error is raised
            self.failed, self.scorer, self.waiting = True, None, []

    def finish(self) -> RunScorer | None:
        """The scorer with every record that waited scored; None when scoring failed during the run."""
        if self.failed:
            return None
        try:
            return self._scorer()
        except Exception:
            self.failed, self.scorer, self.waiting = True, None, []
            return None

    def _scorer(self) -> RunScorer:
        if self.scorer is None:
            from harness.run.runlog import CaseCache
            from harness.score.scoring import RunScorer

            self.scorer = RunScorer(self.excerpt_chars, CaseCache(self.cases).get)
        for record in self.waiting:
            self.scorer.add(record)
        self.waiting.clear()
        return self.scorer


class CaseViewsAsItGoes:
    """The report's view of each case (`harness.report.load.case_view`), made from the case the run held when its
    first headline record was written, so that the report after the run neither reads nor validates the cases
    again. Records written while the report's modules still load (`Preload`) are left out: the report reads
    their cases from cases.jsonl, as it reads every case when this failed. At most `VIEWS_KEPT` cases get a view
    (some 5 KiB of page JSON, and its trace): a longer run's memory does not grow with its cases, and the report
    reads the rest. A view made without its trace is made again when a record whose trace was elided needs it."""

    VIEWS_KEPT = 1000

    def __init__(self, preload: Preload, excerpt_chars: int) -> None:
        self.preload, self.excerpt_chars = preload, excerpt_chars
        self.views: dict[str, CaseShown] = {}
        self.failed = False

    def __call__(self, record: ResultRecord, case: Case | None) -> None:
        if self.failed or case is None or case.id != record.case_id or self.preload.loading():
            return
        known = self.views.get(case.id)
        if known is not None and (known.trace is not None or not record.trace_from_case):
            return
        if known is None and len(self.views) >= self.VIEWS_KEPT:
            return
        try:
            from harness.report.load import case_view
            from harness.score.headline import is_headline

            if is_headline(record):
                raw = case.model_dump(mode="json", by_alias=True, exclude_none=True)  # as cases.jsonl holds it
                self.views[case.id] = case_view(raw, case, self.excerpt_chars, record.trace_from_case)
        except Exception:  # the report reads the cases itself instead
            self.failed, self.views = True, {}


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
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    if args.fail_on_regression and worse:
        err.print(f"regression: {', '.join(worse)} significantly worse in {args.run_b}", highlight=False)
        return EXIT_GATE
    return EXIT_OK
