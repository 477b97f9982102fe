"""The typed, versioned run log: the single source for metrics and reports.

A run folder holds `manifest.json` (what ran), `cases.jsonl` (the content of
every case, once), and `results.jsonl` (one record per case × variant × epoch,
appended and flushed as each finishes, so a killed run loses nothing finished).
This module holds the models; `harness.run.folder` every read and write.

results_v2 against v1: no `parsed_reply` (the persisted evaluation holds what the policy read of
the reply, `raw_reply` the text), and the persisted trace summary is not copied into every record when it is
the case's own (`trace_from_case`): `persisted_of` puts it back from cases.jsonl. `upgrade_v1` reads a v1 line.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    model_serializer,
    model_validator,
)

from harness.corpus.schema import Case
from harness.run.gates import Gates
from harness.run.outcome import Facts, Findings, Outcome, StoredOutcome, judged, judged_outcome
from harness.run.settings import ExecutorSettings, ShardSettings, StopEarlySettings
from harness.system.models import PolicySettings, Usage, Verdict
from harness.system.store_names import EVALUATION_KEY

RESULTS_SCHEMA = "results_v2"
MANIFEST_SCHEMA = "manifest_v1"


POLICY_VARIANT = "policy"
"""The variant name of a policy case's unit (its verifier is the case's scripted reply, not a model)."""


class LogModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GatekeeperOutcome(LogModel):
    status: str
    failed_rules: list[str]
    warnings: list[str]


class Gold(LogModel):
    """The case's expectations, copied so metrics need nothing but the log."""

    parse_status: str
    gatekeeper: dict[str, Any]
    claims: dict[str, list[str]] | None
    verdict: list[str]
    model_verdict: list[str] | None


class ResultRecord(LogModel):
    """One case × variant × epoch."""

    schema_version: Literal["results_v2"] = "results_v2"
    case_id: str
    case_hash: str
    kind: Literal["policy", "quality"]
    variant: str
    epoch: int
    dataset: str
    tags: list[str]
    spec: list[str]
    parse_status: str | None
    gatekeeper: GatekeeperOutcome | None
    claims: dict[str, str]
    critical_claims: list[str] = Field(default_factory=list)
    executor_claim_ids: list[str] = Field(default_factory=list)
    model_verdict: Verdict | None
    verdict: Verdict | None
    derived_verdict: Verdict | None = None
    error: str | None
    reply_status: str | None = None
    invalid_reason: str | None = None
    raw_reply: str | None = None
    adjustments: list[dict[str, Any]] = Field(default_factory=list)
    gold: Gold
    sibling_keys: list[str] = Field(default_factory=list)
    persisted: dict[str, Any] | None = None
    """The persisted `self_evaluation` (sibling keys included); without its trace summary when `trace_from_case`."""
    trace_from_case: bool = False
    """The persisted `tool_trace_summary` was the case's own trace at the run's excerpt limit, checked when the
    record was made, and is not copied here: `persisted_of` restores it from the case."""
    latency_ms: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 0
    cached: bool = False
    replayed: bool = False
    """The whole result was replayed from an earlier run (same code, case, variant, epoch: `harness.run.replay`)."""
    harness_cpu_ms: float = 0.0
    finished_at: str = ""
    perturbation: str | None = None
    """The perturbation (harness.corpus.perturb) this unit ran under; None for the case as written."""
    perturbation_seed: int | None = None
    claim_id_map: dict[str, str] | None = None
    """Perturbed claim id -> the case's own (claim-ids), to read the answers back."""
    store_namespace: str | None = None
    """The prefix of every session id this result's case wrote to the store (`--store`: where to find its rows)."""
    outcome: StoredOutcome | None = None
    """The result judged against its gold (`harness.run.outcome`), once, when the record is made; never None
    after validation (see `_judged_once`). A record is not edited after it is made: a `model_copy(update=...)` of
    its error, answers or gold would keep the old judgement (make a new record instead)."""
    findings: Findings | None = None
    """The record checked against its case's expectations and invariants (`harness.run.conformance`), once, by the
    run's worker that made it; None where the case was not at hand (a folder written before records carried
    them, a perturbed unit, a kit's SUT answer): a reader then checks it against the folder's case (`found`)."""

    @model_validator(mode="after")
    def _judged_once(self) -> ResultRecord:
        """Judge the record as it is made, inside the run's worker, so no reader applies the rule again; a line
        from a run folder written before records carried their outcome is judged as it is read (`judged`)."""
        self.outcome = judged(self.outcome, self.facts)
        return self

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.case_id, self.case_hash, self.variant, self.epoch)

    @property
    def facts(self) -> Facts:
        """What the record is judged on (`harness.run.outcome`): its error, answers and gold."""
        return facts_of(self)

    @property
    def evaluation(self) -> dict[str, Any] | None:
        """The persisted `verifier_evaluation` as written in the record (its trace elided when `trace_from_case`)."""
        stored = (self.persisted or {}).get(EVALUATION_KEY)
        return stored if isinstance(stored, dict) else None

    @property
    def groundedness(self) -> float | None:
        """The groundedness score the policy read from a valid reply (persisted; null for no or an invalid reply)."""
        value = (self.evaluation or {}).get("groundedness_score")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class GoldSummary(BaseModel):
    """`Gold` as `RecordSummary` reads it."""

    model_config = ConfigDict(extra="ignore")
    verdict: list[str]
    claims: dict[str, list[str]] | None = None
    model_verdict: list[str] | None = None


class RecordSummary(BaseModel):
    """A results.jsonl line's summary, as Inspect AI's `EvalSample.summary()`: the fields a reader of every result
    needs (the report's per-result tables, sign-off and drill-down picks), parsed from the line without the rest
    (the persisted evaluation, the raw reply). Each field is `ResultRecord`'s of the same name and alias, and its
    outcome is the record's (`facts_of`, the stored judgement): a test holds both to the record."""

    model_config = ConfigDict(extra="ignore")
    case_id: str
    case_hash: str = ""
    variant: str
    epoch: int
    kind: Literal["policy", "quality"]
    spec: list[str]
    verdict: str | None
    model_verdict: str | None = None
    error: str | None
    claims: dict[str, str]
    gold: GoldSummary
    perturbation: str | None = None
    trace_from_case: bool = False
    """The record's trace summary is the case's own, elided from the line (`ResultRecord.trace_from_case`)."""
    judgement: StoredOutcome | None = Field(default=None, alias="outcome")
    """The outcome the run stored with the record (absent in a folder written before records carried it)."""

    @property
    def key(self) -> tuple[str, str, int]:
        """(case, variant, epoch): the result's row in the report's tables (without the case hash of
        `ResultRecord.key`)."""
        return (self.case_id, self.variant, self.epoch)

    @cached_property
    def outcome(self) -> Outcome:
        """The record's outcome, as scoring reads it: the stored judgement, or the record's facts judged now."""
        return judged_outcome(self.judgement, facts_of(self))

    @property
    def scored(self) -> bool:
        return self.error is None

    @property
    def verdict_correct(self) -> bool:
        return self.outcome.verdict_correct


def facts_of(record: ResultRecord | RecordSummary) -> Facts:
    """What a record is judged on (`harness.run.outcome`): its error, answers and gold, read the same way from the
    record and from its summary."""
    gold = record.gold
    return Facts(
        record.error, record.verdict, record.model_verdict, record.claims, gold.verdict, gold.claims, gold.model_verdict
    )


def case_trace(case: Case, excerpt_chars: int, keep: bool = True) -> list[dict[str, Any]]:
    """The trace summary the spec defines for a case at an excerpt limit, as persisted JSON (§7)."""
    return case.trace_json(excerpt_chars, keep)


def elide_trace(persisted: dict[str, Any] | None, trace: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, bool]:
    """`persisted` without its trace summary when that is exactly `trace` (the case's): (persisted, elided)."""
    stored = (persisted or {}).get(EVALUATION_KEY)
    if not isinstance(stored, dict) or stored.get("tool_trace_summary") != trace:
        return persisted, False
    lean = {k: v for k, v in stored.items() if k != "tool_trace_summary"}
    return {**(persisted or {}), EVALUATION_KEY: lean}, True


def persisted_of(record: ResultRecord, case: Case | None, excerpt_chars: int) -> dict[str, Any] | None:
    """The whole persisted `self_evaluation` of a record, its elided trace restored from the case."""
    if not record.trace_from_case or case is None:
        return record.persisted
    return with_trace(record.persisted, case_trace(case, excerpt_chars))


def with_trace(persisted: dict[str, Any] | None, trace: list[Any]) -> dict[str, Any] | None:
    """`persisted` with `trace` (the case's, as `case_trace` gives it, or its entries as read for judging) as its
    evaluation's trace summary."""
    stored = (persisted or {}).get(EVALUATION_KEY)
    if persisted is None or not isinstance(stored, dict):
        return persisted
    return {**persisted, EVALUATION_KEY: {**stored, "tool_trace_summary": trace}}


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A results_v1 record as v2: `parsed_reply` dropped (the persisted evaluation holds what was read of it)."""
    out = {k: v for k, v in data.items() if k != "parsed_reply"}
    out["schema_version"] = RESULTS_SCHEMA
    return out


STORE_UNAVAILABLE = "store_unavailable"
"""The error reason of a case the store failed (`harness.system.store.StoreUnavailable`); `--resume` redoes it."""


def error_reason(error: str) -> str:
    """The reason word of a record's `error` (`timeout: no reply within 5 s` -> `timeout`): what the run's
    errors are counted by. Errors are written `<reason>: <detail>` (a client `ErrorReason`, `case_timeout`,
    `harness_error`)."""
    return error.split(":", 1)[0].strip() or "unknown"


class VariantInfo(LogModel):
    """A component value: everything that identifies what produced a figure."""

    name: str
    model: str
    prompt: str | None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    prompt_path: str | None = None
    """The variant directory a prompt given as a path was loaded from (packaged prompts: None)."""
    policy: PolicySettings = Field(default_factory=PolicySettings)
    """The verdict policy's settings this variant ran under (the pipeline gets this very object)."""
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _policy_from_claim_guard(cls, data: Any) -> Any:
        """A v1 manifest (and the committed baseline) records only the flat `claim_guard`: it becomes `policy`."""
        if isinstance(data, dict) and "claim_guard" in data:
            data = dict(data)
            guard = data.pop("claim_guard")
            data.setdefault("policy", {"claim_guard": guard})
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def claim_guard(self) -> bool:
        """Still written to the manifest: readers of v1 manifests find the key they know."""
        return self.policy.claim_guard


class ManifestSettings(BaseModel):
    """The run's settings as the manifest records them, one typed field per component.

    Every field is optional (a manifest written before a setting existed reads) and only the settings that were
    set are written back (an old manifest keeps its bytes); a key this version does not know is kept as it came.
    The mapping methods let a reader ask for a setting by its manifest key (`settings.get("perturb")`) and the run
    record one (`settings["executor"] = ...`), checked against its field's type.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)
    claim_guard: bool | None = None
    policy: PolicySettings | None = None
    cache: str | None = None
    replay: bool | None = None
    case_timeout: int | float | None = None
    store: str | None = None
    """The result store's URL without its credentials."""
    code_fingerprint: str | None = None
    gates: Gates | None = None
    control: str | None = None
    baseline: str | None = None
    """The baseline folder, absolute, decided against; `baseline_sha256` its outcomes' hash then."""
    baseline_sha256: str | None = None
    anchor: str | None = None
    """The anchor folder, absolute: a fixed reference each candidate is also decided against."""
    perturb: list[str] | None = None
    perturb_seed: int | None = None
    stop_early: StopEarlySettings | None = None
    """The sequential design (look size, seed) and, once the run ends, where and why it stopped."""
    perturbed_cases: dict[str, int] | None = None
    executor: ExecutorSettings | None = None
    """The executor's name, and a cluster's version and address once it joined."""
    shard: ShardSettings | None = None
    planned_units: int | None = None
    """The units this folder's run planned (a shard's own): fewer results is an unfinished run (`missing_units`)."""

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self}

    def __contains__(self, key: object) -> bool:
        return key in self.model_fields_set or key in (self.__pydantic_extra__ or {})

    def __getitem__(self, key: str) -> Any:
        if key not in self:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self else default

    def keys(self) -> list[str]:
        """The keys that were set, in the order they are written."""
        return [k for k in (*type(self).model_fields, *(self.__pydantic_extra__ or {})) if k in self]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, getattr(self, k)) for k in self.keys()]


class Manifest(LogModel):
    schema_version: Literal["manifest_v1"] = "manifest_v1"
    run_id: str
    created: str
    package_version: str
    git_sha: str | None
    corpus_hash: str
    case_dirs: list[str]
    case_count: int
    policy_cases: int
    quality_cases: int
    epochs: int
    concurrency: int
    excerpt_chars: int
    filters: list[str] = Field(default_factory=list)
    variants: list[VariantInfo]
    prompts: dict[str, dict[str, Any]] = Field(default_factory=dict)
    settings: ManifestSettings = Field(default_factory=ManifestSettings)
    python: str = ""
    platform: str = ""
    verifiers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Each variant's `Verifier.describe()`: what built its results (a baseline's version, signals, settings)."""
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per variant, recorded when the run ended: its provider, its verifier's `describe()` then (the model
    client's settings without secrets, the structured-output mode in use and the refusals met, the prompt)
    and its `replay_identity()`. Absent from a manifest written before it existed."""
