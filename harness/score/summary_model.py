"""`summary.json` as a versioned pydantic model: written and read only through `Summary`.

The summary's keys are a contract users' CI scripts read: keys are added, never renamed. So every model
here allows extra keys (a summary written by a later version reads; its extras are written back as they
came) and gives every field but the identifying ones a default (a summary written before a key existed
reads). The registered metrics (`harness.score.registry`) sit flat on a variant as `<key>` and
`<key>_ci`, checked against the registry rather than declared twice.

`vbench certify` writes its summary.json through the same model and writer, marked `"kind": "certify"`: it
names the system it certified (`sut`) where a run's summary names its run (`run`, required of a run's).

Every layer after scoring (the console, junit.xml, summary.md and the report, the certificate, the pull-request
comment) takes a `Summary` and reads its fields; this module alone reads and writes the file, and reads an older
summary's keys (`Comparison.verdict_p`: a comparison from before Holm). A run's figures are read in one place,
`Summary.figures()`. Gates are a tagged union by name (`Gate`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    model_serializer,
    model_validator,
)

from harness.run.folder import SUMMARY_FILE, read_text, write_text
from harness.run.settings import StopEarlySettings
from harness.score.registry import metrics, summary_keys

SUMMARY_SCHEMA: Literal["summary_v1"] = "summary_v1"
"""Unchanged since keys are only ever added; a reader of an older summary sees the fields it lacks as unset."""


class SummaryPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values with exactly the keys that were set (a key absent from the input stays absent)."""
        data: dict[str, Any] = json.loads(json.dumps(self.model_dump(exclude_unset=True), default=_json_default))
        return data


Part = TypeVar("Part", bound=SummaryPart)


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
    unfinished: Unfinished | None = None
    """Set when the folder holds fewer results than its run planned (a killed run): never reported as passed."""


class Unfinished(SummaryPart):
    """A run folder with fewer results than its run planned (`run.plan.missing_units`)."""

    results: int
    planned: int


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
"""What a paired decision says (`score.paired`): summary.json's `decision` and a metric's `outcome`."""


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
    regressions_total: int | None = None
    """Set when `regressions` holds only the first of them (a study of many variants): how many there were."""
    changed: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Settings that differ between the two sides: {key: {"control": .., "candidate": ..}}."""
    tests: dict[str, str] = Field(default_factory=dict)
    """The interval and test names the metrics used, each with what it is (recorded once per decision)."""
    cases_needed: int | None = None
    """When inconclusive for want of cases: about how many paired cases the gated metrics need."""
    anchor: Decision | None = None
    """With an anchor: the same candidate decided against that fixed reference (`decide.with_anchor`)."""
    decided_by: Literal["control", "anchor"] | None = None
    """With an anchor: which of the two comparisons gave `decision` (absent without one)."""
    control_decision: DecisionKind | None = None
    """With an anchor: the decision against the control alone (absent without one)."""


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

    @property
    def verdict_p(self) -> float | None:
        """The verdict test's p over the family: Holm-adjusted, or the raw p of a summary written before Holm."""
        return self.p_adjusted if "p_adjusted" in self.model_fields_set else self.mcnemar_p

    @property
    def claim_p(self) -> float | None:
        """The claim-accuracy test's p over the family (the raw p of a summary written before Holm)."""
        if "claim_accuracy_diff_p_adjusted" in self.model_fields_set:
            return self.claim_accuracy_diff_p_adjusted
        return self.claim_accuracy_diff_p


class GateResult(SummaryPart):
    """What every gate of the run states: a threshold on a figure, policy conformance, or a ship decision.

    `value` and `threshold` are the figure and its bound; a ship decision's are the decision and its control's name.
    `checked` is false when the gate had nothing to check (then it never counts as passed). Read from summary.json
    as one of its kinds (`Gate`); a gate of a kind this version does not know reads as this base.
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


class PolicyGate(GateResult):
    """Policy conformance: the policy cases that agreed (`value`) of those scored (`threshold`)."""

    gate: Literal["policy_conformance"] = "policy_conformance"
    value: int = 0
    threshold: int = 0


class ThresholdGate(GateResult):
    """A figure of one variant against its bound, `<figure>>=<bound>` or `<figure><=<bound>`; a missing figure
    (`value` None) fails."""

    value: int | float | None = None
    threshold: float


class DecisionGate(GateResult):
    """A ship decision as a gate: the decision (`value`) of the candidate (`variant`) against its control
    (`threshold`)."""

    gate: Literal["ship_decision"] = "ship_decision"
    value: DecisionKind
    threshold: str


_THRESHOLD = re.compile(r"^\w+(<=|>=)")


class CompletenessGate(GateResult):
    """The run's results (`value`) against those it planned (`threshold`): an unfinished run fails it."""

    gate: Literal["run_finished"] = "run_finished"
    value: int = 0
    threshold: int = 0


def _gate_kind(data: Any) -> str:
    name = data.get("gate") if isinstance(data, dict) else getattr(data, "gate", None)
    if name in ("policy_conformance", "ship_decision", "run_finished"):
        return str(name)
    return "threshold" if isinstance(name, str) and _THRESHOLD.match(name) else "other"


Gate = Annotated[
    Annotated[PolicyGate, Tag("policy_conformance")]
    | Annotated[DecisionGate, Tag("ship_decision")]
    | Annotated[CompletenessGate, Tag("run_finished")]
    | Annotated[ThresholdGate, Tag("threshold")]
    | Annotated[GateResult, Tag("other")],
    Discriminator(_gate_kind),
]
"""One gate of summary.json, read as its kind by its name."""


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


Number = int | float
"""A figure as it was written: an int stays an int, a float a float (the summary's values are not converted)."""


class ClassFigures(SummaryPart):
    """One claim label's precision, recall and F1 against the gold labels, and how many gold claims have it."""

    precision: Number | None = None
    recall: Number | None = None
    f1: Number | None = None
    support: Number = 0


class GroupFigures(SummaryPart):
    """One group of a breakdown (a scenario, a tag, a data set): its cases, then each grouped registered metric's
    figure and the group's claims as extra keys, in the order they were written."""

    cases: Number = 0

    def figure(self, key: str) -> Any:
        """A grouped metric's value (None when this group does not hold it)."""
        return (self.__pydantic_extra__ or {}).get(key)


class DatasetGrounding(SummaryPart):
    """Grounding balanced accuracy on one source data set, with its CI, over its gold claims."""

    grounding_bacc: Number | None = None
    grounding_bacc_ci: list[Number] | None = None
    claims: Number = 0


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
    per_class: dict[str, ClassFigures] = Field(default_factory=dict)
    claim_confusion: Matrix = Field(default_factory=Matrix)
    unsafe_eligible_cases: int = 0
    verdict_confusion: Matrix = Field(default_factory=Matrix)
    model_verdict_confusion: Matrix = Field(default_factory=Matrix)
    grounding_bacc_by_dataset: dict[str, DatasetGrounding] = Field(default_factory=dict)
    invalid_reasons: dict[str, int] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    latency_ms: dict[str, float | None] = Field(default_factory=dict)
    harness_cpu_ms: dict[str, float | None] = Field(default_factory=dict)
    cached_results: int = 0
    replayed_results: int = 0
    per_scenario: dict[str, GroupFigures] = Field(default_factory=dict)
    per_tag: dict[str, GroupFigures] = Field(default_factory=dict)
    per_dataset: dict[str, GroupFigures] = Field(default_factory=dict)
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

    def figure_ci(self, key: str) -> list[float] | None:
        """A registered metric's CI as [low, high] (None when not computed or not held)."""
        ci = (self.__pydantic_extra__ or {}).get(f"{key}_ci")
        return list(ci) if ci is not None else None

    def figures(self) -> dict[str, float | None]:
        """Every registered metric's value by key (None where this summary does not hold it)."""
        return {m.key: self.figure(m.key) for m in metrics()}

    @property
    def error_rate(self) -> float | None:
        """The share of quality cases that got no model reply (None without quality cases)."""
        return self.errors / self.quality_cases if self.quality_cases else None

    def row(self) -> dict[str, Any]:
        """The variant as plain JSON values, for a template or a chart: the keys the summary holds (one written before
        a key existed lacks it, as the file does)."""
        return self.to_json()

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


class BaselineRef(SummaryPart):
    """The finished run folder the decisions were made against."""

    path: str


class AnchorRef(SummaryPart):
    """The fixed reference run folder every decision was also made against (`--anchor`)."""

    path: str


MCB_METHOD = "hsu-mcb"
Standing = Literal["best", "may be best", "not best"]


class RankedVariant(SummaryPart):
    """One variant's place in the family: its rate, and its MCB interval of (this rate − the best other's)."""

    name: str
    rank: int
    rate: float | None
    """None when no case was answered by every variant."""
    mcb_lower: float
    mcb_upper: float
    standing: Standing


class Ranking(SummaryPart):
    """Hsu's MCB over a family of variants on one metric: simultaneous intervals, at level 1 − alpha."""

    metric: str
    method: str = MCB_METHOD
    alpha: float
    cases: int
    """Cases every ranked variant answered (the rest are left out of the ranking)."""
    critical_value: float | None
    variants: list[RankedVariant]
    note: str


class Summary(SummaryPart):
    """The whole summary.json: a run's, or (`kind` "certify") a certification's.

    Every layer after scoring reads a summary through this model's fields and methods; only this module reads
    and writes the file, so a key of an older summary is migrated here (see `Comparison.verdict_p`)."""

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
    baseline: BaselineRef | None = None
    anchor: AnchorRef | None = None
    """With an anchor: the fixed reference run folder every decision was also made against."""
    decisions: list[Decision] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)
    passed: bool = False
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    """The registered metrics the figures were computed with (`MetricSpec.describe()`)."""
    stop_early: StopEarlySettings | None = None
    """A `--stop-early` run's stop: its design, the look it stopped at and why (`harness.run.looks.stop_record`)."""
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

    @property
    def results(self) -> int | None:
        """How many results the run scored (None for a certification, which names no run)."""
        return self.run.results if self.run is not None else None

    def figures(self) -> dict[str, dict[str, float | None]]:
        """The headline figures of each variant, by variant name: every registered metric's value (None where not
        measured). The one place a run's figures are read from, for whoever records or compares them."""
        return {v.name: v.figures() for v in self.variants}

    def variant(self, name: str) -> VariantSummary | None:
        return next((v for v in self.variants if v.name == name), None)

    def failures_by_unit(self) -> dict[tuple[str, str, int], ConformanceFailure]:
        """Conformance failures by (case id, variant, epoch); a run's failures each name their variant."""
        return {(f.case_id, f.variant or "", f.epoch): f for f in self.conformance.failures}

    def failing_cases(self, kind: str | None = None) -> list[str]:
        """The ids of cases with a conformance failure (of `kind` only, when given), sorted and once each."""
        return sorted({f.case_id for f in self.conformance.failures if kind is None or f.kind == kind})

    def quality_errors(self) -> int:
        """Quality cases, over every variant, that ended with no model reply (a certification's: `errors`)."""
        return sum(v.errors for v in self.variants)

    def worst_decision(self) -> DecisionKind | None:
        """The worst of the ship decisions (block, then inconclusive, then ship); None when nothing was decided."""
        kinds = {d.decision for d in self.decisions}
        return next((k for k in ("block", "inconclusive", "ship") if k in kinds), None)

    def renamed(self, rename: Mapping[str, str]) -> Summary:
        """A copy with every variant name mapped (several runs in one report: a shared name gets its run's prefix).

        A name is only assigned where it changes, so the copy holds the same keys as the summary."""
        out = self.model_copy(deep=True)

        def swap(part: BaseModel, field: str) -> None:
            name = getattr(part, field)
            if isinstance(name, str) and rename.get(name, name) != name:
                setattr(part, field, rename[name])

        for v in out.variants:
            swap(v, "name")
        for c in out.comparisons:
            swap(c, "a")
            swap(c, "b")
        for f in out.conformance.failures:
            swap(f, "variant")
        for g in out.gates:
            swap(g, "variant")
        for d in out.decisions:
            swap(d, "candidate")
            swap(d, "control")
        return out


def in_full(part: Part) -> Part:
    """`part` with every field marked as set, nested parts too: a part computed now is written whole (only a part
    read from an older summary leaves out the keys it lacked)."""
    return type(part).model_validate(part.model_dump())


ANCHOR_KEYS = frozenset({"anchor", "decided_by", "control_decision"})


def decision_written(decision: Decision) -> Decision:
    """A decision as summary.json holds it: whole, but for the keys of what it was not made with (an anchor, a
    trimmed list of regressions), so a decision keeps the keys it always had."""
    exclude = set() if decision.anchor else set(ANCHOR_KEYS)
    if decision.regressions_total is None:
        exclude.add("regressions_total")
    return Decision.model_validate(decision.model_dump(exclude=exclude))


def write_summary(
    run_dir: Path, data: Summary | Mapping[str, Any], *, sort_keys: bool = False, indent: int | None = 2
) -> Summary:
    """Validate and write summary.json (2-space indent, ASCII, no NaN) whole; return the summary written.

    `sort_keys`: keys in sorted order rather than the model's, as `vbench certify` has always written its summary.
    `indent`: None writes it on one line (a study of many variants, where the indent is a third of the file).
    """
    summary = data if isinstance(data, Summary) else Summary.model_validate(data)
    text = json.dumps(summary.to_json(), indent=indent, allow_nan=False, sort_keys=sort_keys)
    write_text(run_dir, SUMMARY_FILE, text + "\n")
    return summary


def read_summary_file(run_dir: Path) -> Summary:
    """A run's summary.json through the model; raises OSError or ValueError (pydantic's included) when unreadable."""
    return Summary.model_validate_json(read_text(run_dir, SUMMARY_FILE))


def read_summary_or_none(run_dir: Path) -> Summary | None:
    """summary.json as the run wrote it, or None when it is missing or unreadable."""
    if not (run_dir / SUMMARY_FILE).exists():
        return None
    try:
        return read_summary_file(run_dir)
    except (OSError, ValueError):  # pydantic's ValidationError included
        return None


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
