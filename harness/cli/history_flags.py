"""`vbench run`'s history flags: `--history STORE` (record the finished run), `--control history:REF` (decide
against a recorded run without re-running it), `--anchor history:REF` (a second test against a fixed reference)
and `--pair-common`.

A history ref becomes a baseline folder (`.cache/history/<record id>`, the recorded run's manifest and unit
outcomes) before any request is sent, so the run pairs, decides and rescores through the same code as with
`--baseline DIR`. `history = "STORE"` in the study file (vbench.toml) is the same as `--history STORE`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from harness.history.store import HistoryStore
    from harness.run.caseref import CaseRef
    from harness.run.study import Study

# harness.history is imported where it is used: `vbench run` starts without pandas (tests/test_startup.py)

MATERIALISED = Path(".cache/history")
"""Where a recorded control or anchor is written as a baseline folder (one per record id, written once)."""
DEFAULT_STUDY = Path("vbench.toml")


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("run history (docs/guides/history.md)")
    group.add_argument(
        "--history",
        metavar="STORE",
        help="record the finished run in this history store: a folder, or a SQLAlchemy URL (sqlite:///h.db, "
        "postgresql://...); `history` in vbench.toml is the same. --control/--anchor history:REF read it",
    )
    group.add_argument(
        "--anchor",
        metavar="REF",
        help="also decide each candidate against a fixed reference (history:TAG, history:RUN, or a run folder): "
        "a chain of changes cannot lose more than the margin against it; the decision names which test decided",
    )
    group.add_argument(
        "--pair-common",
        action="store_true",
        help="with --control/--anchor history:REF: accept a recorded run of another corpus and decide on the cases "
        "both share",
    )


def store_spec(flag: str | None, study: Study | None = None, study_file: Path | None = None) -> str:
    """The history store a command names: its --history, else the study's `history`, else vbench.toml's."""
    from harness.history.record import HistoryError
    from harness.run.study import StudyError, load_study_file

    if flag:
        return flag
    if study is not None and study.history:
        return study.history
    path = study_file or DEFAULT_STUDY
    if path.is_file():
        try:
            value = load_study_file(path).get("history")
        except StudyError as exc:
            raise HistoryError(str(exc)) from None
        if isinstance(value, str) and value:
            return value
        if value is not None:
            raise HistoryError(f"{path}: history: a folder or a SQLAlchemy URL (a string), not {value!r}")
    raise HistoryError(
        "no history store: pass --history STORE (a folder or a SQLAlchemy URL) or set history in vbench.toml"
    )


def _materialise(
    store: HistoryStore, ref: str, study: Study, cases: list[CaseRef], pair_common: bool, role: str
) -> Path:
    from harness.history.ops import as_control_folder
    from harness.history.refs import match
    from harness.run.plan import build_variants, corpus_hash

    models = sorted({v.model for v in build_variants(study)})
    head = match(
        store.heads(), store.tags(), ref, models=models, corpus_hash=corpus_hash(cases), pair_common=pair_common,
        role=role,
    )  # fmt: skip
    folder = MATERIALISED / head.id
    if not (folder / "outcomes.jsonl").is_file():
        as_control_folder(store.load(head.id), folder)
    return folder.resolve()


def apply(study: Study, cases: list[CaseRef], args: argparse.Namespace) -> Study:
    """The study with history refs turned into baseline folders and `--history` set; raises HistoryError (exit 2)."""
    from harness.history.record import HistoryError
    from harness.history.refs import is_history_ref
    from harness.history.store import open_store

    update: dict[str, Any] = {}
    history = getattr(args, "history", None)
    if history:
        update["history"] = history
    anchor = getattr(args, "anchor", None)
    pair_common = bool(getattr(args, "pair_common", False))
    uses_history = is_history_ref(study.control) or is_history_ref(anchor)
    if uses_history:
        store = open_store(store_spec(history, study, args.study))
        if is_history_ref(study.control):
            if study.baseline is not None:
                raise HistoryError("--control history:REF is the baseline: drop --baseline")
            update["baseline"] = _materialise(store, str(study.control), study, cases, pair_common, "control")
            update["control"] = None
        if is_history_ref(anchor):
            update["anchor"] = _materialise(store, str(anchor), study, cases, pair_common, "anchor")
    if anchor and "anchor" not in update:
        update["anchor"] = Path(anchor)
    if update.get("anchor") is not None and study.control is None and study.baseline is None:
        raise HistoryError("--anchor is a second test beside a control: name a control too (--control)")
    return study.model_copy(update=update) if update else study


def record_finished(study: Study, run_dir: Path, err: Console) -> bool:
    """Record a finished run in the study's history store; False (said in one line, with the command that records
    it later) when the store cannot take it. The run folder is whole either way: nothing is lost."""
    if not study.history:
        return True
    from harness.history.record import HistoryError, record_run_folder
    from harness.history.store import open_store, shown_store

    try:
        store = open_store(study.history)
        record = record_run_folder(run_dir, costs=costs_of(run_dir))
        store.add(record)
    except HistoryError as exc:
        err.print(f"[red]error:[/red] the run was not recorded in the history: {escape(str(exc))}", highlight=False)
        err.print(f"  record it once the store answers: vbench history record {run_dir} --history {shown_store(study.history)}",
                  highlight=False, markup=False)  # fmt: skip
        return False
    err.print(f"recorded in the history {store.label} as {record.head.id}", highlight=False, markup=False)
    return True


def costs_of(run_dir: Path) -> dict[str, dict[str, Any] | None]:
    """Each variant's cost from its tokens and the price table ($VBENCH_PRICES; none: no cost)."""
    from harness.report.prices import PriceError, cost_of, load_prices
    from harness.score.summary_model import read_summary_file

    try:
        prices = load_prices(None)
        summary = read_summary_file(run_dir)
    except (PriceError, OSError, ValueError):
        return {}  # no price table, or no summary (the record says why it cannot be made)
    return {v.name: cost_of(v.model, v.tokens, prices) for v in summary.variants} if prices else {}
