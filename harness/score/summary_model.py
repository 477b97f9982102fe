"""`summary.json` as a versioned pydantic model: written and read only through `Summary`.

The summary's keys are a contract users' CI scripts read: keys are added, never renamed. So every model
here allows extra keys (a summary written by a later version reads; its extras are written back as they
came) and gives every field but the identifying ones a default (a summary written before a key existed
reads). The registered metrics (`harness.score.registry`) sit flat on a variant as `<key>` and
`<key>_ci`, checked against the registry rather than declared twice.

`vbench certify` writes its summary.json through the same model and writer, marked `"kind": "certify"`: it
names the system it certified (`sut`) where a run's summary names its run (`run`, required of a run's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from harness.run.folder import SUMMARY_FILE, read_text, write_text
from harness.score.family import Ranking
from harness.score.registry import metrics, summary_keys

SUMMARY_SCHEMA: Literal["summary_v1"] = "summary_v1"
"""Unchanged since keys are only ever added; a reader of an older summary sees the fields it lacks as unset."""


class SummaryPart(BaseModel):
    model_config = ConfigDict(extra="allow")


class RunInfo(SummaryPart):
    run_id: str
    created: str = ""
    package_version: str = ""
    git_sha: str | None = None
    corpus_hash: str = ""
    epochs: int = 1
    cases: int = 0
    results: int = 0
    perturbed_results: int = 0


class ScenarioTally(SummaryPart):
    cases: int = 0
    passed: int = 0


class ConformanceFailure(SummaryPart):
    case_id: str
    kind: str
    variant: str | None = None
    epoch: int = 1
    mismatches: list[str] = Field(default_factory=list)
    invariant_violations: list[str] = Field(default_factory=list)


class Conformance(SummaryPart):
    policy_cases: int = 0
    policy_passed: int = 0
    policy_pass_rate: float | None = None
    invariant_violations: int = 0
    quality_expectation_mismatches: int = 0
    scenarios: dict[str, ScenarioTally] = Field(default_factory=dict)
    uncovered_scenarios: list[str] = Field(default_factory=list)
    failures: list[ConformanceFailure] = Field(default_factory=list)
    passed: bool = False


DecisionKind = Literal["ship", "block", "inconclusive"]


class MetricComparison(SummaryPart):
    """One metric of one decision: the paired rule's figures (`harness.score.paired.PairedDecision`), gated or not."""

    control: float | None = None
    candidate: float | None = None
    diff: float | None = None
    diff_ci: list[float] | None = None
    p: float | None = None
    test: str = "none"
    mde: float | None = None
    units: int = 0
    gated: bool = False
    significantly_worse: bool = False
    non_inferior: bool = False
    outcome: DecisionKind = "inconclusive"
    """This metric's own outcome (the decision combines the gated ones)."""
    interval: str | None = None
    cases: int = 0
    discordant: int | None = None
    design_effect: float | None = None
    worse_bound: float | None = None
    """The CI's bound on the worse side, as a loss (positive: worse by that much)."""
    cases_needed: int | None = None
    reason: str = ""


class ClaimChange(SummaryPart):
    """A claim whose label differs between the control and the candidate on a regressed unit."""

    claim_id: str
    control: str | None = None
    candidate: str | None = None
    gold: list[str] = Field(default_factory=list)


class Regression(SummaryPart):
    """A paired unit where the control's verdict was right and the candidate's is wrong."""

    case_id: str
    epoch: int = 1
    control_verdict: str | None = None
    candidate_verdict: str | None = None
    claim_changes: list[ClaimChange] = Field(default_factory=list)


class Decision(SummaryPart):
    """The ship decision of one candidate against its control (`harness.score.decide.decide`); fractions, not points."""

    candidate: str
    control: str
    control_run: str = ""
    paired_cases: int = 0
    unpaired_cases: int = 0
    paired_units: int = 0
    unpaired_units: int = 0
    """The candidate's units with no control unit (an epoch the control did not run, a changed case)."""
    metrics: dict[str, MetricComparison] = Field(default_factory=dict)
    margin: float = 0.0
    mde: float | None = None
    alpha: float = 0.05
    decision: DecisionKind
    reasons: list[str] = Field(default_factory=list)
    regressed_cases: list[str] = Field(default_factory=list)
    regressions: list[Regression] = Field(default_factory=list)
    changed: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Settings that differ between the two sides: {key: {"control": .., "candidate": ..}}."""
    tests: dict[str, str] = Field(default_factory=dict)
    """The interval and test names the metrics used, each with what it is (recorded once per decision)."""
    cases_needed: int | None = None
    """When inconclusive for want of cases: about how many paired cases the gated metrics need."""


class Comparison(SummaryPart):
    """A pair of variants (B against A) decided as a ship decision; differences stored as A − B.

    A summary written before comparisons were decisions holds the figures only (no `decision`, `conclusion`).
    """

    a: str
    b: str
    cases: int = 0
    unpaired_cases: int = 0
    units: int = 0
    verdict_accuracy_diff: float | None = None
    verdict_accuracy_diff_ci: list[float] | None = None
    verdict_accuracy_a: float | None = None
    verdict_accuracy_b: float | None = None
    mcnemar_a_only: int = 0
    mcnemar_b_only: int = 0
    mcnemar_p: float | None = None
    test: str | None = None
    mde: float | None = None
    claim_accuracy_diff: float | None = None
    claim_accuracy_diff_ci: list[float] | None = None
    claim_accuracy_diff_p: float | None = None
    decision: DecisionKind | None = None
    conclusion: str | None = None
    reasons: list[str] = Field(default_factory=list)
    margin: float | None = None
    alpha: float | None = None
    tests: dict[str, str] = Field(default_factory=dict)
    cases_needed: int | None = None
    p_adjusted: float | None = None
    """Holm-adjusted over every comparison of the run, beside the raw `mcnemar_p`."""
    claim_accuracy_diff_p_adjusted: float | None = None


class GateResult(SummaryPart):
    """One gate of the run: a threshold on a figure, policy conformance, or a ship decision (`gate` "ship_decision").

    `value` and `threshold` are the figure and its bound; a ship decision's are the decision and its control's name.
    `checked` is false when the gate had nothing to check (then it never counts as passed).
    """

    gate: str
    variant: str | None = None
    value: int | float | str | None = None
    threshold: int | float | str | None = None
    passed: bool
    detail: str = ""
    checked: bool = True

    @property
    def status(self) -> Literal["passed", "failed", "not checked"]:
        """How the gate is stated: one that checked nothing says so whether it holds (filtered out) or fails."""
        if not self.checked:
            return "not checked"
        return "passed" if self.passed else "failed"


class Stability(SummaryPart):
    """With several epochs: cases whose verdict was right in every epoch, in some, in none."""

    stable_right: int = 0
    flaky: int = 0
    stable_wrong: int = 0
    majority_verdict_accuracy: float | None = None
    flaky_cases: list[str] = Field(default_factory=list)


class Consistency(SummaryPart):
    """With several epochs: pass^k and the verdict flip rate over cases scored in every epoch."""

    k: int
    cases: int = 0
    pass_k: float | None = None
    pass_k_ci: list[float] | None = None
    verdict_flip_rate: float | None = None
    verdict_flip_rate_ci: list[float] | None = None


class CalibrationBin(SummaryPart):
    low: float
    high: float
    n: int = 0
    mean_score: float | None = None
    pass_right: float | None = None


class Calibration(SummaryPart):
    """AUROC and ECE of the groundedness score for "PASS is the right verdict"."""

    scored: int = 0
    auroc: float | None = None
    ece: float | None = None
    bins: list[CalibrationBin] = Field(default_factory=list)


class PerturbationFigures(SummaryPart):
    """One variant under one perturbation: how often answers flipped, and the accuracy under it."""

    cases: int = 0
    units: int = 0
    verdict_flip_rate: float | None = None
    verdict_flip_rate_ci: list[float] | None = None
    claim_flip_rate: float | None = None
    claim_flip_rate_ci: list[float] | None = None
    verdict_accuracy: float | None = None
    verdict_accuracy_ci: list[float] | None = None
    claim_accuracy: float | None = None
    claim_accuracy_ci: list[float] | None = None


class Matrix(SummaryPart):
    labels: list[str] = Field(default_factory=list)
    matrix: list[list[int]] = Field(default_factory=list)


HEAD_KEYS = (
    "name", "model", "prompt", "prompt_version", "prompt_hash", "claim_guard",
    "quality_cases", "quality_samples", "errors", "error_samples", "errors_by_reason", "claims_scored",
)  # fmt: skip
"""A variant's identity and counts: written first, the registered metrics next, the details after."""


class VariantSummary(SummaryPart):
    """Every figure of one variant; the registered metrics are extra keys checked by `_metric_values`."""

    name: str
    model: str = ""
    prompt: str | None = None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    claim_guard: bool = True
    quality_cases: int = 0
    quality_samples: int = 0
    errors: int = 0
    error_samples: int = 0
    errors_by_reason: dict[str, int] = Field(default_factory=dict)
    claims_scored: int = 0
    per_class: dict[str, dict[str, Any]] = Field(default_factory=dict)
    claim_confusion: Matrix = Field(default_factory=Matrix)
    unsafe_eligible_cases: int = 0
    verdict_confusion: Matrix = Field(default_factory=Matrix)
    model_verdict_confusion: Matrix = Field(default_factory=Matrix)
    grounding_bacc_by_dataset: dict[str, dict[str, Any]] = Field(default_factory=dict)
    invalid_reasons: dict[str, int] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    latency_ms: dict[str, float | None] = Field(default_factory=dict)
    harness_cpu_ms: dict[str, float | None] = Field(default_factory=dict)
    cached_results: int = 0
    replayed_results: int = 0
    per_scenario: dict[str, dict[str, Any]] = Field(default_factory=dict)
    per_tag: dict[str, dict[str, Any]] = Field(default_factory=dict)
    per_dataset: dict[str, dict[str, Any]] = Field(default_factory=dict)
    stability: Stability | None = None
    consistency: Consistency | None = None
    calibration: Calibration | None = None
    robustness: dict[str, PerturbationFigures] | None = None
    """{perturbation: figures}, one entry per perturbation the run asked for (absent without --perturb)."""

    @model_validator(mode="after")
    def _metric_values(self) -> VariantSummary:
        """A registered metric's figure is a number or null, its CI a [low, high] pair or null."""
        extra = self.__pydantic_extra__ or {}
        for m in metrics():
            value, ci = extra.get(m.key), extra.get(f"{m.key}_ci")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"variant {self.name!r}: {m.key} is {value!r}, not a number")
            if ci is not None and not (isinstance(ci, list) and len(ci) == 2):
                raise ValueError(f"variant {self.name!r}: {m.key}_ci is {ci!r}, not [low, high]")
        return self

    def figure(self, key: str) -> Any:
        """A registered metric's value (None when this summary does not hold it)."""
        return (self.__pydantic_extra__ or {}).get(key)

    @model_serializer(mode="wrap")
    def _ordered(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        first = [k for k in (*HEAD_KEYS, *summary_keys()) if k in data]
        return {**{k: data[k] for k in first}, **{k: v for k, v in data.items() if k not in first}}


class Skipped(SummaryPart):
    """The cases a certification did not run (quality cases, when no model endpoint was named), and why."""

    quality_cases: int = 0
    case_ids: list[str] = Field(default_factory=list)
    reason: str = ""


class Summary(SummaryPart):
    """The whole summary.json: a run's, or (`kind` "certify") a certification's."""

    schema_version: Literal["summary_v1"] = SUMMARY_SCHEMA
    kind: Literal["run", "certify"] = "run"
    """Absent from a run's summary (the default); "certify" in the one `vbench certify` writes."""
    run: RunInfo | None = None
    """Required of a run's summary (see `_run_named`); a certification has no run id."""
    conformance: Conformance
    variants: list[VariantSummary] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    ranking: Ranking | None = None
    """Hsu's MCB ranking of a run's variants (three or more), on verdict accuracy."""
    baseline: dict[str, Any] | None = None
    decisions: list[Decision] = Field(default_factory=list)
    gates: list[GateResult] = Field(default_factory=list)
    passed: bool = False
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    """The registered metrics the figures were computed with (`MetricSpec.describe()`)."""
    # a certification's own keys (at the top level, where a run keeps the like in `run`)
    created: str | None = None
    package_version: str | None = None
    sut: dict[str, Any] | None = None
    """The certified system: its URL and its `GET /info` answer."""
    corpus_hash: str | None = None
    filters: list[str] | None = None
    errors: int | None = None
    """Cases the system under test answered with an error."""
    skipped: Skipped | None = None

    @model_validator(mode="after")
    def _run_named(self) -> Summary:
        if self.kind == "run" and self.run is None:
            raise ValueError("run: a run's summary names its run (only a certify summary has none)")
        return self

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values with exactly the keys that were set (a key absent from the input stays absent)."""
        data: dict[str, Any] = json.loads(json.dumps(self.model_dump(exclude_unset=True), default=_json_default))
        return data


def summary_dict(data: dict[str, Any]) -> dict[str, Any]:
    """A summary mapping checked against the model and returned as plain JSON values."""
    return Summary.model_validate(data).to_json()


def write_summary(run_dir: Path, data: dict[str, Any], *, sort_keys: bool = False) -> dict[str, Any]:
    """Validate and write summary.json (2-space indent, ASCII, no NaN) whole; return what was written.

    `sort_keys`: keys in sorted order rather than the model's, as `vbench certify` has always written its summary.
    """
    checked = summary_dict(data)
    write_text(run_dir, SUMMARY_FILE, json.dumps(checked, indent=2, allow_nan=False, sort_keys=sort_keys) + "\n")
    return checked


def read_summary_file(run_dir: Path) -> Summary:
    """A run's summary.json through the model; raises OSError or ValueError (pydantic's included) when unreadable."""
    return Summary.model_validate_json(read_text(run_dir, SUMMARY_FILE))


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
