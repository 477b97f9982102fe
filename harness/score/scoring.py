"""Score a run: summary.json, outcomes.jsonl and junit.xml from its log (`harness.run.runlog.RunLog`).

`score_log` scores a read model the caller already has (the run that just wrote the records, or the report);
`score_run` reads a run folder's into one and scores that. Both give the same files for the same records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.corpus.forks import Forked, may_fork
from harness.corpus.schema import Case
from harness.run.folder import JUNIT_FILE, UnitKey, write_text
from harness.run.gates import GateSettings as GateSettings  # the one gate model, also imported from here
from harness.run.log import ResultRecord
from harness.run.plan import missing_units
from harness.run.runlog import RunLog
from harness.score.conformance import CaseViews
from harness.score.frames import SharedLists, claim_rows, claims_table, quality_row, quality_table
from harness.score.gates import completeness_gate, threshold_gates
from harness.score.headline import is_headline
from harness.score.junit import junit_xml
from harness.score.outcome import record_outcome
from harness.score.outcomes import outcome_row, outcomes_table, write_outcomes
from harness.score.regression import decision_gates, load_control_run, make_decisions
from harness.score.robustness import add_robustness
from harness.score.summary import ConformanceTally, case_problems, summarise
from harness.score.summary_model import write_summary

CHUNK = 500
"""Records whose frame rows become frames at a time while scoring streams the log: bounds memory, not the figures."""


@dataclass
class LogFrames:
    """What scoring keeps of a run log read once: frames, the conformance tally and what robustness pairs."""

    quality: pd.DataFrame
    claims: pd.DataFrame
    outcomes: pd.DataFrame
    conformance: dict[str, Any]
    gold: dict[str, dict[str, list[str]]]
    policy_ids: list[str]
    headline: int
    logged: int
    robustness_units: list[ResultRecord]


Problems = tuple[list[str], list[str]]
"""(expectation mismatches, invariant violations) of one record against its case (`summary.case_problems`)."""


class RunScorer:
    """Checks records against their cases one at a time as the run writes them: the part of scoring that needs the
    case, done while the case is at hand, so that scoring after the run neither reads nor validates cases again.

    It keeps each headline unit's findings only (a unit's last record counts, as in the log): a clean unit costs a
    dict entry, so a long run's scorer stays small. The frame rows are made after the run from the records read
    back once, in unit-key order (`read_log_frames`), so the figures are the same whichever way the findings came.
    `case_of` gives a record's case (the run's own, validated once; None when it has none).
    """

    def __init__(self, excerpt_chars: int, case_of: Callable[[str], Case | None]) -> None:
        self.excerpt_chars, self.case_of = excerpt_chars, case_of
        self.views = CaseViews()
        self.problems: dict[UnitKey, Problems] = {}

    def add(self, record: ResultRecord, case: Case | None = None) -> None:
        """Check one record; a later record of the same unit (a retry) replaces the earlier one's findings.
        `case`: the case the record was made from, when the caller holds it (else `case_of` gives it)."""
        if is_headline(record):
            self.problems[record.key] = self.check(record, case)
        else:
            self.problems.pop(record.key, None)

    def check(self, record: ResultRecord, case: Case | None = None) -> Problems:
        if case is None or case.id != record.case_id:
            case = self.case_of(record.case_id)
        found = case_problems(record, case, self.excerpt_chars, self.views)
        return CLEAN if not found[0] and not found[1] else found


CLEAN: Problems = ([], [])
"""The findings of a record that met its case: one object shared by every clean unit (nothing changes it)."""

CHECK_APART_FROM = 20_000
"""The fewest units of a log scored after its run for which the later units are checked in a forked child: the
checks against the cases are a third of scoring's CPU, and the child has the other core."""
CHECKED_HERE = 0.4
"""The share of units (the first, in key order) this process checks itself when a child checks the rest: this
process also reads every record and makes the frame rows, so the child takes the larger part (set for a report that scores a
long log again while another child reads its page)."""


def check_units(log: RunLog, start: int) -> dict[UnitKey, Problems]:
    """The findings of the headline units from the `start`-th (in key order) that did not meet their cases (a clean
    unit is left out)."""
    checker = RunScorer(log.manifest.excerpt_chars, log.case)
    found: dict[UnitKey, Problems] = {}
    for record in log.records(start):
        if is_headline(record):
            problems = checker.check(record)
            if problems is not CLEAN:
                found[record.key] = problems
    return found


def _check_apart(log: RunLog) -> tuple[int, Forked[dict[UnitKey, Problems]] | None]:
    """(the first unit checked apart, the child checking from it), when the log is long and forking is safe; else
    (the number of units, None)."""
    units = len(log.keys())
    if units < CHECK_APART_FROM or not may_fork():
        return units, None
    split = int(units * CHECKED_HERE)
    return split, Forked(check_units, log, split)


def read_log_frames(log: RunLog, keep_for_robustness: bool, scored: RunScorer | None = None) -> LogFrames:
    """One streaming pass over the log's records in unit-key order: memory holds frame rows, not records.

    Each record is checked against its case (`RunLog.case`: validated once), unless `scored` already checked it
    while the run wrote it; its stored outcome is read with what was judged beside it and turned into frame rows at
    once (the record is then dropped); the rows become frames in chunks. Only with `keep_for_robustness` are
    records kept, without the persisted evaluation and the raw reply (robustness compares answers and labels,
    nothing else).
    """
    checker = RunScorer(log.manifest.excerpt_chars, log.case)
    checked = scored.problems if scored is not None else {}
    clean: Problems | None = None  # what an unchecked unit's findings are taken to be (None: check it here)
    tally = ConformanceTally()
    lists = SharedLists()
    parts: dict[str, list[pd.DataFrame]] = {"quality": [], "claims": [], "outcomes": []}
    rows: dict[str, list[dict[str, Any]]] = {"quality": [], "claims": [], "outcomes": []}
    gold: dict[str, dict[str, list[str]]] = {}
    policy_ids: set[str] = set()
    kept: list[ResultRecord] = []
    headline = logged = 0

    tables = {"quality": quality_table, "claims": claims_table, "outcomes": outcomes_table}

    def flush() -> None:
        # an empty chunk is left out: concatenated, its untyped columns would turn every column of the frame
        # into Python objects (and float sums into another summation order) whenever the count is a multiple
        # of CHUNK or a chunk held no row of a kind
        for name, build in tables.items():
            if rows[name]:
                parts[name].append(build(rows[name]))
                rows[name].clear()

    split, apart = _check_apart(log) if scored is None else (len(log.keys()), None)
    try:
        for index, record in enumerate(log.records()):
            logged += 1
            if keep_for_robustness:
                kept.append(record.model_copy(update={"persisted": None, "raw_reply": None}))
            if index == split and apart is not None:
                found = apart.result_or_none()
                if found is not None:  # the child checked every unit from here on (else they are checked here)
                    checked, clean = found, CLEAN
            if not is_headline(record):
                continue
            headline += 1
            problems = checked.get(record.key, clean if index >= split else None)
            tally.add(record, *(problems if problems is not None else checker.check(record)))
            result = record_outcome(record)
            if record.kind == "quality":
                gold[record.case_id] = record.gold.claims or {}
                rows["quality"].append(quality_row(record, result, lists))
                rows["claims"].extend(claim_rows(record, result, lists))
            else:
                policy_ids.add(record.case_id)
            unit = outcome_row(record, result)
            if unit is not None:
                rows["outcomes"].append(unit)
            if headline % CHUNK == 0:
                flush()
    except BaseException:  # the child's findings are not wanted any more
        if apart is not None:
            apart.cancel()
        raise
    flush()
    frames = {name: pd.concat(found, ignore_index=True) if found else tables[name]([]) for name, found in parts.items()}
    return LogFrames(
        frames["quality"],
        frames["claims"],
        frames["outcomes"],
        tally.result(),
        gold,
        sorted(policy_ids),
        headline,
        logged,
        kept,
    )


def score_run(run_dir: Path, settings: GateSettings, scored: RunScorer | None = None) -> dict[str, Any]:
    """Read the run folder's log once (`RunLog.read`) and score it (`score_log`; the findings `scored` holds are
    taken from it); return the summary."""
    return score_log(RunLog.read(run_dir), settings, run_dir, scored)


def score_log(
    log: RunLog, settings: GateSettings, run_dir: Path | None = None, scored: RunScorer | None = None
) -> dict[str, Any]:
    """Compute the summary with its gates from a run's log, write the scored files, return the summary.

    `run_dir`: where summary.json, outcomes.jsonl and junit.xml go (the folder the log was read from when not
    given; a log made in memory must be given one). Everything but `variants[].robustness` reads the headline
    results only (perturbed units left out). The log is read in unit-key order, not the order units finished: every figure (float sums, bootstrap draws)
    is then the same for the same results, whatever the concurrency, executor or shards that made them.
    """
    run_dir = run_dir if run_dir is not None else log.run_dir
    if run_dir is None:
        raise ValueError("score_log: a log made in memory needs the run folder its scored files go to")
    gates, baseline_dir = settings.gates, settings.baseline
    manifest = log.manifest
    perturbations = manifest.settings.get("perturb") or []
    frames = read_log_frames(log, keep_for_robustness=bool(perturbations), scored=scored)
    outcomes = frames.outcomes
    summary = summarise(
        manifest, frames.quality, frames.claims, outcomes, frames.conformance, frames.headline, frames.gold,
        margin=gates.margin_fraction, alpha=gates.alpha, gated=tuple(gates.decide_on),
    )  # fmt: skip
    add_robustness(summary, frames.robustness_units, perturbations)
    summary["run"]["perturbed_results"] = frames.logged - frames.headline
    missing = missing_units(manifest, frames.logged)
    if missing:
        summary["run"]["unfinished"] = {"results": frames.logged, "planned": frames.logged + missing}
    gate_rows = threshold_gates(summary, gates, manifest) + completeness_gate(summary["run"].get("unfinished"))
    baseline = load_control_run(baseline_dir) if baseline_dir is not None else None
    decisions = make_decisions(
        manifest,
        frames.gold,
        outcomes,
        settings.control,
        baseline,
        gated=tuple(gates.decide_on),
        margin=gates.margin_fraction,
        alpha=gates.alpha,
    )
    if baseline is not None:
        summary["baseline"] = {"path": str(baseline_dir)}
    summary["decisions"] = [d.model_dump(mode="json") for d in decisions]
    stop = manifest.settings.get("stop_early")
    if isinstance(stop, dict) and "look" in stop:  # a --stop-early run: where and why it stopped sending cases
        summary["stop_early"] = stop
    gate_rows += decision_gates(decisions, gates.require_ship)
    summary["gates"] = gate_rows
    summary["passed"] = all(g["passed"] for g in gate_rows)
    summary = write_summary(run_dir, summary)
    write_outcomes(run_dir, outcomes)
    write_text(
        run_dir, JUNIT_FILE, junit_xml(summary["conformance"], frames.policy_ids, gate_rows, summary["decisions"])
    )
    return summary
