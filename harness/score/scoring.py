"""Score a run: summary.json, outcomes.jsonl and junit.xml from its log (`harness.run.runlog.RunLog`).

`score_log` scores a read model the caller already has (the run that just wrote the records, or the report);
`score_run` reads a run folder's into one and scores that. Both give the same files for the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.run.conformance import CaseViews, found
from harness.run.folder import JUNIT_FILE, write_text
from harness.run.gates import GateSettings as GateSettings  # the one gate model, also imported from here
from harness.run.log import ResultRecord
from harness.run.plan import missing_units
from harness.run.runlog import RunLog
from harness.score.family import large_family, trimmed
from harness.score.frames import SharedLists, claim_rows, claims_table, quality_row, quality_table
from harness.score.gates import completeness_gate, decision_gates, threshold_gates
from harness.score.headline import is_headline
from harness.score.junit import junit_xml
from harness.score.outcome import record_outcome
from harness.score.outcomes import outcome_row, outcomes_table, write_outcomes
from harness.score.regression import against_anchor, load_control_run, make_decisions
from harness.score.robustness import add_robustness
from harness.score.summary import ConformanceTally, summarise
from harness.score.summary_model import (
    AnchorRef,
    BaselineRef,
    Conformance,
    Summary,
    Unfinished,
    decision_written,
    write_summary,
)

CHUNK = 500
"""Records whose frame rows become frames at a time while scoring streams the log: bounds memory, not the figures."""


@dataclass
class LogFrames:
    """What scoring keeps of a run log read once: frames, the conformance tally and what robustness pairs."""

    quality: pd.DataFrame
    claims: pd.DataFrame
    outcomes: pd.DataFrame
    conformance: Conformance
    gold: dict[str, dict[str, list[str]]]
    policy_ids: list[str]
    headline: int
    logged: int
    robustness_units: list[ResultRecord]


def read_log_frames(log: RunLog, keep_for_robustness: bool) -> LogFrames:
    """One streaming pass over the log's records in unit-key order: memory holds frame rows, not records.

    Each record's conformance findings and outcome are those the run's worker stored with it (a record written
    before records carried findings is checked against the folder's case: `conformance.found`); the outcome is
    read with what was judged beside it and turned into frame rows at once (the record is then dropped); the rows
    become frames in chunks. Only with `keep_for_robustness` are
    records kept, without the persisted evaluation and the raw reply (robustness compares answers and labels,
    nothing else).
    """
    excerpt_chars, views = log.manifest.excerpt_chars, CaseViews()
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

    for record in log.records():
        logged += 1
        if keep_for_robustness:
            kept.append(record.model_copy(update={"persisted": None, "raw_reply": None}))
        if not is_headline(record):
            continue
        headline += 1
        findings = found(record, log.case, excerpt_chars, views)
        tally.add(record, findings.mismatches, findings.invariant_violations)
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


def score_run(run_dir: Path, settings: GateSettings) -> Summary:
    """Read the run folder's log once (`RunLog.read`) and score it (`score_log`); return the summary."""
    return score_log(RunLog.read(run_dir), settings, run_dir)


def score_log(log: RunLog, settings: GateSettings, run_dir: Path | None = None) -> Summary:
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
    perturbations = manifest.settings.perturb or []
    frames = read_log_frames(log, keep_for_robustness=bool(perturbations))
    outcomes = frames.outcomes
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
    names = [v.name for v in manifest.variants]
    large = large_family(names, gates.all_pairs)
    summary = summarise(
        manifest, frames.quality, frames.claims, outcomes, frames.conformance, frames.headline, frames.gold,
        perturbed_results=frames.logged - frames.headline, margin=gates.margin_fraction, alpha=gates.alpha,
        gated=tuple(gates.decide_on), control=settings.control, all_pairs=gates.all_pairs,
        decided={(d.control, d.candidate): d for d in decisions if baseline is None},
    )  # fmt: skip
    add_robustness(summary.variants, frames.robustness_units, perturbations)
    missing = missing_units(manifest, frames.logged)
    if missing and summary.run is not None:
        summary.run.unfinished = Unfinished(results=frames.logged, planned=frames.logged + missing)
    gate_rows = threshold_gates(summary, gates, manifest) + completeness_gate(
        summary.run.unfinished if summary.run is not None else None
    )
    if settings.anchor is not None:
        decisions = against_anchor(
            decisions, manifest, frames.gold, outcomes, load_control_run(settings.anchor),
            gated=tuple(gates.decide_on), margin=gates.margin_fraction, alpha=gates.alpha,
        )  # fmt: skip
        summary.anchor = AnchorRef(path=str(settings.anchor))
    if baseline_dir is not None:
        summary.baseline = BaselineRef(path=str(baseline_dir))
    # written whole; a decision without an anchor keeps the keys it always had
    summary.decisions = [decision_written(trimmed(d) if large else d) for d in decisions]
    stop = manifest.settings.stop_early
    if stop is not None and stop.ended:  # a --stop-early run: where and why it stopped sending cases
        summary.stop_early = stop
    gate_rows += decision_gates(decisions, gates.require_ship)
    summary.gates = gate_rows
    summary.passed = all(g.passed for g in gate_rows)
    summary = write_summary(run_dir, summary, indent=None if large else 2)
    write_outcomes(run_dir, outcomes)
    write_text(run_dir, JUNIT_FILE, junit_xml(summary, frames.policy_ids))
    return summary
