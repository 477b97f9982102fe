"""`summary.json` as a versioned pydantic model: written and read only through `Summary`.

The keys of issue 5 are a contract users' CI scripts read: keys are added, never renamed. So every model
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
    stability: dict[str, Any] | None = None
    consistency: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    robustness: dict[str, dict[str, Any]] | None = None

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
    comparisons: list[dict[str, Any]] = Field(default_factory=list)
    baseline: dict[str, Any] | None = None
    decisions: list[dict[str, Any]] = Field(default_factory=list)
    gates: list[dict[str, Any]] = Field(default_factory=list)
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
