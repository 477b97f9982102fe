"""The conformance sign-off: every spec scenario with its cases, pass or fail per column, and what was certified.

A column is either a run's policy cases (deterministic, run once per suite:
they certify the implementation) or one variant's quality cases, of which only
the deterministic expectations (parse status, gatekeeper) and the invariants
are conformance; their quality scores are measurements, never certification.
"""

from __future__ import annotations

import sys
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from harness.corpus.catalogue import Scenario
from harness.run.log import Manifest
from harness.score.certificate import certificate_status, corpus_label
from harness.score.summary_model import Summary

FailureKey = tuple[str, str, int]
SHOW_FAILURES = 50


@dataclass(frozen=True)
class Column:
    run: str
    variant: str
    kind: str  # "policy" | "quality"
    label: str


class ResultRow(NamedTuple):
    """One result as the sign-off and the per-epoch and per-case tables read it: small and made of atoms (a plain
    tuple), so a long log's rows cost the garbage collector little."""

    run: str
    case_id: str
    variant: str
    epoch: int
    kind: str
    spec: tuple[str, ...]
    ok: bool
    scored: bool
    verdict_correct: bool


class ResultFields(Protocol):
    """What a result row is made of: a result read for the report (`log.RecordSummary`, `load.Scanned`)."""

    @property
    def case_id(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def spec(self) -> Sequence[str]: ...
    @property
    def scored(self) -> bool: ...
    @property
    def verdict_correct(self) -> bool: ...
    @property
    def key(self) -> FailureKey: ...


def result_row(run: str, row: ResultFields, failed: Container[FailureKey]) -> ResultRow:
    """A result's case, variant, kind, scenarios, whether it held its conformance checks, and (for the per-epoch
    table) whether it was scored and its verdict right, as score.frames defines them."""
    return ResultRow(
        run,
        sys.intern(row.case_id),
        sys.intern(row.variant),
        row.epoch,
        row.kind,
        _spec_tuple(row.spec),
        row.key not in failed,
        row.scored,
        row.verdict_correct,
    )


def result_rows(run: str, rows: Sequence[ResultFields], failed: Container[FailureKey]) -> list[ResultRow]:
    """One `ResultRow` per result: run, case, variant, kind, scenarios, whether it held its conformance checks,
    and (for the per-epoch table) whether it was scored and its verdict right (see `result_row`)."""
    return [result_row(run, r, failed) for r in rows]


_SPECS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _spec_tuple(spec: Sequence[str]) -> tuple[str, ...]:
    """Scenario lists repeat across results: keep one shared tuple of each."""
    key = tuple(spec)
    return _SPECS.setdefault(key, key)


def cell_counts(results: Iterable[ResultRow]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(scenario, run, variant) -> cases, passed cases, failing case ids. A case passes when all its epochs do."""
    per_case: dict[tuple[str, str, str, str], bool] = {}
    for r in results:
        for spec in r.spec:
            key = (spec, r.run, r.variant, r.case_id)
            per_case[key] = per_case.get(key, True) and r.ok
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (spec, run, variant, case_id), ok in per_case.items():
        cell = out.setdefault((spec, run, variant), {"cases": 0, "passed": 0, "failed": []})
        cell["cases"] += 1
        cell["passed"] += ok
        if not ok:
            cell["failed"].append(case_id)
    for cell in out.values():
        cell["failed"].sort()
    return out


def scenario_cases(results: Iterable[ResultRow]) -> dict[str, dict[str, list[str]]]:
    """Scenario -> {policy: [case ids], quality: [case ids]} over every run."""
    found: dict[str, dict[str, set[str]]] = {}
    for r in results:
        for spec in r.spec:
            found.setdefault(spec, {}).setdefault(r.kind, set()).add(r.case_id)
    return {
        spec: {"policy": [], "quality": [], **{kind: sorted(ids) for kind, ids in by_kind.items()}}
        for spec, by_kind in sorted(found.items())
    }


def cell_status(cell: Mapping[str, Any] | None) -> str:
    if not cell or not cell["cases"]:
        return "none"
    return "pass" if cell["passed"] == cell["cases"] else "fail"


def scenario_rows(
    catalogue: Mapping[str, Scenario], results: Sequence[ResultRow], columns: Sequence[Column]
) -> list[dict[str, Any]]:
    """A row per catalogue scenario (and per unknown scenario a case names), in spec order."""
    counts = cell_counts(results)
    cases = scenario_cases(results)
    ids = list(catalogue) + sorted(set(cases) - set(catalogue))
    rows = []
    for sid in ids:
        scn = catalogue.get(sid)
        cells = [counts.get((sid, c.run, c.variant)) for c in columns]
        statuses = [cell_status(c) for c in cells]
        policy_statuses = [s for s, col in zip(statuses, columns, strict=True) if col.kind == "policy"]
        if "fail" in statuses:
            status = "fail"
        elif all(s == "none" for s in statuses):
            status = "uncovered"
        elif policy_statuses and all(s == "pass" for s in policy_statuses):
            status = "certified"
        elif any(s == "pass" for s in policy_statuses):
            status = "partial"  # certified in some runs only
        else:
            status = "deterministic-only"
        rows.append(
            {
                "id": sid,
                "requirement": scn.requirement if scn else "(not in the spec catalogue)",
                "title": scn.title if scn else sid,
                "steps": [(s.keyword, s.text) for s in scn.steps] if scn else [],
                "source": f"{scn.change}: {scn.source}" if scn else "",
                "known": scn is not None,
                "policy_cases": cases.get(sid, {}).get("policy", []),
                "quality_cases": len(cases.get(sid, {}).get("quality", [])),
                "cells": [{**(c or {"cases": 0, "passed": 0, "failed": []}), "status": s} for c, s in zip(cells, statuses, strict=True)],
                "status": status,
            }
        )  # fmt: skip
    return rows


def columns_for(run: str, manifest: Manifest, policy_variant: str, rename: Mapping[str, str]) -> list[Column]:
    cols = [Column(run, policy_variant, "policy", "policy cases")]
    cols += [Column(run, rename.get(v.name, v.name), "quality", rename.get(v.name, v.name)) for v in manifest.variants]
    return cols


def certification(
    run: str,
    manifest: Manifest,
    summary: Summary,
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    rename: Mapping[str, str],
    corpus_policy_cases: int | None = None,
) -> dict[str, Any]:
    """What this run certifies, exactly, and what it does not (`corpus_policy_cases`: before any filter)."""
    conf = summary.conformance
    idx = [i for i, c in enumerate(columns) if c.run == run]
    policy_idx = [i for i in idx if columns[i].kind == "policy"]
    certified, det_only, failing, uncovered = [], [], [], []
    for row in rows:
        statuses = [row["cells"][i]["status"] for i in idx]
        policy = [row["cells"][i]["status"] for i in policy_idx]
        if "fail" in statuses:
            failing.append(row["id"])
        elif all(s == "none" for s in statuses):
            uncovered.append(row["id"])
        elif policy and all(s == "pass" for s in policy):
            certified.append(row["id"])
        else:
            det_only.append(row["id"])
    sha = manifest.git_sha or ""
    variants = [
        {
            "name": rename.get(v.name, v.name),
            "model": v.model,
            "prompt": v.prompt,
            "prompt_version": v.prompt_version,
            "prompt_hash": v.prompt_hash,
            "claim_guard": v.claim_guard,
        }
        for v in manifest.variants
    ]
    caveats = []
    if not sha:
        caveats.append(
            "The git commit is unknown (installed package, no git checkout): the implementation cannot be tied to a commit."
        )
    elif sha.endswith("-dirty"):
        caveats.append(
            f"The working tree had uncommitted changes (git {sha}): what was certified is that tree, not commit {sha.removesuffix('-dirty')} alone."
        )
    if manifest.filters:
        caveats.append(f"The run was filtered ({', '.join(manifest.filters)}): only part of the corpus ran.")
    caveats += [f"Variant {v['name']} ran with the claim guard off." for v in variants if not v["claim_guard"]]
    errors = summary.quality_errors()
    if errors:
        caveats.append(f"{errors} quality case(s) ended in a transport or harness error and were not scored.")
    failures = [f.model_dump(mode="json") for f in conf.failures]
    if not conf.policy_cases:
        caveats.insert(0, "No policy case ran, so nothing about the implementation is certified.")
    status, headline = (
        certificate_status(
            conf,
            0,
            manifest.filters,
            corpus_policy_cases,
            corpus=corpus_label(manifest.case_dirs, manifest.corpus_hash),
        )
        if "scenarios" in conf.model_fields_set  # a conformance block from before the spec's scenarios: none certified
        else ("failed", "Not certified")
    )
    return {
        "run": run,
        "status": status,
        "headline": headline,
        "passed": status != "failed" and conf.passed and bool(conf.policy_cases),
        "implementation": f"verifier-bench {manifest.package_version}",
        "git_sha": manifest.git_sha,
        "corpus_hash": manifest.corpus_hash,
        "created": manifest.created,
        "cases": manifest.case_count,
        "policy_cases": conf.policy_cases,
        "policy_passed": conf.policy_passed,
        "invariant_violations": conf.invariant_violations,
        "quality_expectation_mismatches": conf.quality_expectation_mismatches,
        "variants": variants,
        "certified": certified,
        "deterministic_only": det_only,
        "failing": failing,
        "uncovered": uncovered,
        "no_policy_case": sorted(conf.uncovered_scenarios),
        "failures": failures[:SHOW_FAILURES],
        "failures_more": max(0, len(failures) - SHOW_FAILURES),
        "caveats": caveats,
    }
