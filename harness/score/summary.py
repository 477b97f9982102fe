"""`summary.json`: conformance, per-variant metrics and paired comparisons, from the run log alone.

The summary's keys are a contract that users' CI scripts read: add
keys, never rename them. Rates are floats, counts ints; a 95% CI sits beside
its figure as `<name>_ci: [low, high]`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import pandas as pd

from harness.corpus.catalogue import load_catalogue
from harness.corpus.schema import Case
from harness.run.log import Manifest, ResultRecord, error_reason, with_trace
from harness.score.compare import compare_pairs
from harness.score.conformance import (
    CaseView,
    CaseViews,
    deterministic_mismatches,
    invariant_violations,
    policy_case_mismatches,
    read_evaluation,
)
from harness.score.metrics import (
    breakdown,
    claim_details,
    grounding_details,
    operations_details,
    stability,
    verdict_details,
)
from harness.score.registry import Frames, compute_all, metrics
from harness.score.reliability import calibration_metrics, consistency_metrics
from harness.score.summary_model import SUMMARY_SCHEMA
from harness.system.store_names import EVALUATION_KEY
from harness.system.trace import DEFAULT_EXCERPT_CHARS


def case_problems(
    record: ResultRecord,
    case: Case | None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    views: CaseViews | None = None,
) -> tuple[list[str], list[str]]:
    """(expectation mismatches, invariant violations) of one record.

    Policy records are checked whole; quality records on their deterministic
    parts (parse status, gatekeeper). Every record is checked for invariants.
    `views`: where a stream of records keeps its current case's `CaseView` (built once per case).
    """
    view = None
    if case is not None:
        view = views.get(case, excerpt_chars) if views is not None else CaseView.of(case, excerpt_chars)
    restored = view is not None and record.trace_from_case
    persisted = record.persisted
    if view is not None and restored:  # the elided trace is the case's spec trace, already read as reported
        persisted = with_trace(record.persisted, list(view.reported_trace))
    if persisted is None or not isinstance(persisted.get(EVALUATION_KEY), dict):
        return ([f"no evaluation: {record.error}"] if record.kind == "policy" else []), []
    if case is None:
        return ["case content missing from the run log"], []
    read = read_evaluation(persisted[EVALUATION_KEY])
    evaluation, unreadable = read
    if evaluation is None:
        violations = invariant_violations(case, persisted, excerpt_chars, read, view, restored)
        return [str(unreadable)], [v for v in violations if v != unreadable]  # said once, as the mismatch
    mismatches = (
        policy_case_mismatches(case, evaluation)
        if record.kind == "policy"
        else deterministic_mismatches(case, evaluation)
    )
    return mismatches, invariant_violations(case, persisted, excerpt_chars, read, view, restored)


class ConformanceTally:
    """Conformance counted one record at a time (scoring streams the log: no record is kept)."""

    def __init__(self, catalogue: Iterable[str] | None = None) -> None:
        """`catalogue`: the scenario ids to count against (a team's own OpenSpec tree); default the package's."""
        ids = load_catalogue() if catalogue is None else catalogue
        self.scenarios: dict[str, dict[str, int]] = {sid: {"cases": 0, "passed": 0} for sid in ids}
        self.failures: list[dict[str, Any]] = []
        self.policy_cases = self.policy_passed = self.invariants = self.quality_mismatches = 0

    def add(self, record: ResultRecord, mismatches: Sequence[str], violations: Sequence[str]) -> None:
        self.invariants += len(violations)
        if record.kind == "policy":
            self.policy_cases += 1
            passed = not mismatches and not violations
            self.policy_passed += passed
            for sid in record.spec:
                entry = self.scenarios.setdefault(sid, {"cases": 0, "passed": 0})
                entry["cases"] += 1
                entry["passed"] += passed
        else:
            self.quality_mismatches += bool(mismatches)
        if mismatches or violations:
            self.failures.append(
                {
                    "case_id": record.case_id,
                    "kind": record.kind,
                    "variant": record.variant,
                    "epoch": record.epoch,
                    "mismatches": list(mismatches),
                    "invariant_violations": list(violations),
                }
            )

    def result(self) -> dict[str, Any]:
        return {
            "policy_cases": self.policy_cases,
            "policy_passed": self.policy_passed,
            "policy_pass_rate": (self.policy_passed / self.policy_cases) if self.policy_cases else None,
            "invariant_violations": self.invariants,
            "quality_expectation_mismatches": self.quality_mismatches,
            "scenarios": self.scenarios,
            "uncovered_scenarios": sorted(sid for sid, v in self.scenarios.items() if v["cases"] == 0),
            "failures": self.failures,
            "passed": self.policy_passed == self.policy_cases and self.invariants == 0 and self.quality_mismatches == 0,
        }


class CaseSource(Protocol):
    def get(self, case_id: str, /) -> Case | None: ...


def conformance(
    records: Iterable[ResultRecord],
    cases: CaseSource,
    extra: Mapping[str, Sequence[str]] | None = None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    catalogue: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Policy cases must agree 100%; invariants must hold for every case of either kind.

    `cases`: by id (a dict, or a run folder's `CaseIndex`). `extra`: further mismatches per case id, found
    outside the persisted outcome (a conformance kit's checks of the request a SUT sent to its model).
    `excerpt_chars`: the run's excerpt limit, which defines the trace summary every evaluation must have persisted.
    """
    tally = ConformanceTally(catalogue)
    views = CaseViews()
    for record in records:
        mismatches, violations = case_problems(record, cases.get(record.case_id), excerpt_chars, views)
        tally.add(record, [*mismatches, *(extra or {}).get(record.case_id, ())], violations)
    return tally.result()


def errors_by_reason(quality: pd.DataFrame) -> dict[str, int]:
    """Error samples (case × epoch with no model reply) per reason, most frequent first; sums to error_samples."""
    errors = quality.loc[~quality["scored"], "error"].dropna()
    counts = Counter(error_reason(str(e)) for e in errors)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def variant_summary(info: dict[str, Any], quality: pd.DataFrame, claims: pd.DataFrame) -> dict[str, Any]:
    """Every figure of one variant: the registered metrics (`harness.score.registry`), then their details."""
    scored_q = quality[quality["scored"]]
    scored_c = claims[claims["scored"]]
    out: dict[str, Any] = {
        **info,
        "quality_cases": int(quality["case_id"].nunique()),
        "quality_samples": len(quality),
        "errors": int(quality.loc[~quality["scored"], "case_id"].nunique()),
        "error_samples": int((~quality["scored"]).sum()),
        "errors_by_reason": errors_by_reason(quality),
    }
    out.update(compute_all(Frames(quality, claims)))
    out.update(claim_details(scored_c))
    out.update(verdict_details(scored_q))
    out.update(grounding_details(scored_c))
    out.update(operations_details(quality))
    out["per_scenario"] = breakdown(quality, claims, "spec")
    out["per_tag"] = breakdown(quality, claims, "tags")
    out["per_dataset"] = breakdown(quality.assign(ds=quality["dataset"].map(lambda d: [d])), claims, "ds")
    out["stability"] = stability(quality)
    out["consistency"] = consistency_metrics(quality)
    out["calibration"] = calibration_metrics(quality)
    return out


def summarise(
    manifest: Manifest,
    quality: pd.DataFrame,
    claims: pd.DataFrame,
    outcomes: pd.DataFrame,
    conformance_figures: dict[str, Any],
    results: int,
    gold: dict[str, dict[str, list[str]]] | None = None,
    **decision_settings: Any,
) -> dict[str, Any]:
    """The whole summary.json, computed after the run from the log's frames and its conformance tally."""
    variants = []
    for info in manifest.variants:
        q = quality[quality["variant"] == info.name]
        c = claims[claims["variant"] == info.name]
        meta = {
            "name": info.name,
            "model": info.model,
            "prompt": info.prompt,
            "prompt_version": info.prompt_version,
            "prompt_hash": info.prompt_hash,
            "claim_guard": info.claim_guard,
        }
        variants.append(variant_summary(meta, q, c))
    # each pair decided as a ship decision of the later variant against the earlier (`decision_settings`:
    # the run's margin, alpha and gated metrics)
    comparisons = compare_pairs(outcomes, [v.name for v in manifest.variants], gold, **decision_settings)
    return {
        "schema_version": SUMMARY_SCHEMA,
        "run": {
            "run_id": manifest.run_id,
            "created": manifest.created,
            "package_version": manifest.package_version,
            "git_sha": manifest.git_sha,
            "corpus_hash": manifest.corpus_hash,
            "epochs": manifest.epochs,
            "cases": manifest.case_count,
            "results": results,
        },
        "conformance": conformance_figures,
        "variants": variants,
        "comparisons": comparisons,
        "metrics": [m.describe() for m in metrics()],
    }
