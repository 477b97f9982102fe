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
from harness.run.conformance import CaseViews, case_problems
from harness.run.log import Manifest, ResultRecord, error_reason
from harness.score.compare import compare_pairs
from harness.score.family import rank_variants
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
from harness.score.summary_model import (
    SUMMARY_SCHEMA,
    Conformance,
    ConformanceFailure,
    RunInfo,
    ScenarioTally,
    Summary,
    VariantSummary,
)
from harness.system.trace import DEFAULT_EXCERPT_CHARS


class ConformanceTally:
    """Conformance counted one record at a time (scoring streams the log: no record is kept)."""

    def __init__(self, catalogue: Iterable[str] | None = None) -> None:
        """`catalogue`: the scenario ids to count against (a team's own OpenSpec tree); default the package's."""
        ids = load_catalogue() if catalogue is None else catalogue
        self.scenarios: dict[str, ScenarioTally] = {sid: ScenarioTally(cases=0, passed=0) for sid in ids}
        self.failures: list[ConformanceFailure] = []
        self.policy_cases = self.policy_passed = self.invariants = self.quality_mismatches = 0

    def add(self, record: ResultRecord, mismatches: Sequence[str], violations: Sequence[str]) -> None:
        self.invariants += len(violations)
        if record.kind == "policy":
            self.policy_cases += 1
            passed = not mismatches and not violations
            self.policy_passed += passed
            for sid in record.spec:
                entry = self.scenarios.setdefault(sid, ScenarioTally(cases=0, passed=0))
                entry.cases += 1
                entry.passed += passed
        else:
            self.quality_mismatches += bool(mismatches)
        if mismatches or violations:
            self.failures.append(
                ConformanceFailure(
                    case_id=record.case_id,
                    kind=record.kind,
                    variant=record.variant,
                    epoch=record.epoch,
                    mismatches=list(mismatches),
                    invariant_violations=list(violations),
                )
            )

    def result(self) -> Conformance:
        return Conformance(
            policy_cases=self.policy_cases,
            policy_passed=self.policy_passed,
            policy_pass_rate=(self.policy_passed / self.policy_cases) if self.policy_cases else None,
            invariant_violations=self.invariants,
            quality_expectation_mismatches=self.quality_mismatches,
            scenarios={sid: tally.model_copy() for sid, tally in self.scenarios.items()},
            uncovered_scenarios=sorted(sid for sid, v in self.scenarios.items() if v.cases == 0),
            failures=self.failures,
            passed=self.policy_passed == self.policy_cases and self.invariants == 0 and self.quality_mismatches == 0,
        )


class CaseSource(Protocol):
    def get(self, case_id: str, /) -> Case | None: ...


def conformance(
    records: Iterable[ResultRecord],
    cases: CaseSource,
    extra: Mapping[str, Sequence[str]] | None = None,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    catalogue: Iterable[str] | None = None,
) -> Conformance:
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


def variant_summary(info: dict[str, Any], quality: pd.DataFrame, claims: pd.DataFrame) -> VariantSummary:
    """Every figure of one variant: the registered metrics (`harness.score.registry`), then their details."""
    scored_q = quality[quality["scored"]]
    scored_c = claims[claims["scored"]]
    unscored = quality.loc[~quality["scored"]]
    return VariantSummary.model_validate(
        {
            **info,
            "quality_cases": int(quality["case_id"].nunique()),
            "quality_samples": len(quality),
            "errors": int(unscored["case_id"].nunique()),
            "error_samples": len(unscored),
            "errors_by_reason": errors_by_reason(quality),
            **compute_all(Frames(quality, claims)),
            **claim_details(scored_c),
            **verdict_details(scored_q),
            **grounding_details(scored_c),
            **operations_details(quality),
            "per_scenario": breakdown(quality, claims, "spec"),
            "per_tag": breakdown(quality, claims, "tags"),
            "per_dataset": breakdown(quality.assign(ds=quality["dataset"].map(lambda d: [d])), claims, "ds"),
            "stability": stability(quality),
            "consistency": consistency_metrics(quality),
            "calibration": calibration_metrics(quality),
        }
    )


def summarise(
    manifest: Manifest,
    quality: pd.DataFrame,
    claims: pd.DataFrame,
    outcomes: pd.DataFrame,
    conformance_figures: Conformance,
    results: int,
    gold: dict[str, dict[str, list[str]]] | None = None,
    *,
    perturbed_results: int = 0,
    **decision_settings: Any,
) -> Summary:
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
    names = [v.name for v in manifest.variants]
    comparisons = compare_pairs(outcomes, names, gold, **decision_settings)
    ranked = rank_variants(outcomes, names, alpha=decision_settings.get("alpha", 0.05)) if len(names) > 2 else None
    return Summary(
        schema_version=SUMMARY_SCHEMA,
        run=RunInfo(
            run_id=manifest.run_id,
            created=manifest.created,
            package_version=manifest.package_version,
            git_sha=manifest.git_sha,
            corpus_hash=manifest.corpus_hash,
            epochs=manifest.epochs,
            cases=manifest.case_count,
            results=results,
            perturbed_results=perturbed_results,
        ),
        conformance=conformance_figures,
        variants=variants,
        comparisons=comparisons,
        **({"ranking": ranked} if ranked is not None else {}),
        metrics=[m.describe() for m in metrics()],
    )
