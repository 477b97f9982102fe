"""What a run is asked to do: from flags and/or a study file (TOML or YAML)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from harness import UsageError
from harness.corpus.loader import strict_yaml
from harness.corpus.perturb import DEFAULT_PERTURB_SEED, parse_perturbations
from harness.run.gates import DEFAULT_DECIDE_ON as DEFAULT_DECIDE_ON
from harness.run.gates import DEFAULT_MARGIN_PP as DEFAULT_MARGIN_PP
from harness.run.gates import Gates, GateSettings
from harness.run.providers import (
    OpenAIProviderSettings,
    ProviderSettings,
    SettingsValueError,
    provider_of,
    settings_for,
)
from harness.run.shard import ShardError, parse_shard
from harness.system.models import PolicySettings
from harness.system.store import store_url
from harness.system.trace import DEFAULT_EXCERPT_CHARS

REFERENCE = "reference"
"""The default model: the offline baseline."""
DEFAULT_PROMPTS = ["baseline"]


ModelSettings = OpenAIProviderSettings
"""The `openai` provider's settings (`harness.run.providers`), under the name studies and tests import."""


class Study(BaseModel):
    """A whole run's settings. Flags override the study file."""

    model_config = ConfigDict(extra="forbid")
    cases: list[Path] = Field(default_factory=lambda: [Path("cases")])
    models: list[str] = Field(default_factory=lambda: [REFERENCE])
    prompts: list[str] = Field(default_factory=lambda: list(DEFAULT_PROMPTS))
    epochs: int = Field(default=1, ge=1)
    concurrency: int = Field(default=8, ge=1, le=1024)
    out: Path | None = None
    cache: Path | None = Path(".cache/responses")
    replay: bool = True
    """Replay whole quality results kept beside the response cache when code, case and variant are unchanged."""
    resume: bool = False
    drop_corrupt: bool = False
    """With `resume`: take corrupt lines out of results.jsonl (kept in results.dropped.jsonl) and redo their cases."""
    baseline: Path | None = None
    control: str | None = Field(
        default=None, description="the control variant (of this run, or of the baseline); '@PROMPT' per model"
    )
    anchor: Path | None = None
    """A fixed reference run folder (a release) each candidate is also decided against, beside its control."""
    history: str | None = None
    """The run history store (a folder or a SQLAlchemy URL) finished runs are recorded into (`harness.history`)."""
    filters: list[str] = Field(default_factory=list)
    excerpt_chars: int = Field(default=DEFAULT_EXCERPT_CHARS, ge=1)
    store: str | None = None
    """Where the system persists: a SQLAlchemy URL, `postgresql://...` (psycopg 3) or a SQLite file path;
    None: a private in-memory SQLite database per worker."""
    case_timeout: float | None = Field(default=None, gt=0)
    """Seconds one case may take over all its attempts; a case past it is recorded as a `case_timeout` error."""
    claim_guard: bool = True
    """The study key (and `--no-claim-guard`); read it as `policy`, the one object the pipeline gets."""
    run_policy: bool = True
    gates: Gates = Field(default_factory=Gates)
    model_settings: dict[str, ProviderSettings] = Field(default_factory=dict)
    """Per model spec: its provider's settings model (`harness.run.providers`)."""
    report: bool = True
    perturb: list[str] = Field(
        default_factory=list, description="perturbations (harness.corpus.perturb) run as extra quality work units"
    )
    perturb_seed: int = Field(
        default=DEFAULT_PERTURB_SEED, ge=0, description="the run seed every perturbation derives from"
    )
    shard: str | None = Field(
        default=None, description="I/N: run only shard I of N of the work units (by a hash of each unit's key)"
    )
    executor: Literal["local", "ray"] = Field(
        default="local", description="where work units run: this process, or Ray tasks (extra verifier-bench[ray])"
    )
    ray_address: str | None = Field(
        default=None, description="the Ray cluster to join (default: a local one started for the run)"
    )
    stop_early: bool = Field(
        default=False,
        description="send quality cases in a seeded random order, in looks, and stop when the sequential rule "
        "blocks, ships or finds a ship out of reach (needs a decision: a control)",
    )
    look_size: int = Field(default=20, ge=1, description="with stop_early: quality cases per look")
    stop_seed: int = Field(default=0, ge=0, description="with stop_early: the seed of the order cases are sent in")

    @field_validator("shard", mode="before")
    @classmethod
    def _shard(cls, value: Any) -> Any:
        """'I/N' normalised; anything else names what is expected."""
        if value is None:
            return None
        try:
            return str(parse_shard(str(value)))
        except ShardError as exc:
            raise ValueError(str(exc)) from exc

    @property
    def policy(self) -> PolicySettings:
        """The verdict policy's settings, built once from the study's keys, for every variant of the run."""
        return PolicySettings(claim_guard=self.claim_guard)

    def gate_settings(self, alpha: float | None = None) -> GateSettings:
        """What scoring applies to this study's run; `alpha`: the level its decisions are made at when it is not
        the study's own (a stop-early run decides at its last look's level)."""
        gates = self.gates if alpha is None else self.gates.model_copy(update={"alpha": alpha})
        return GateSettings(gates=gates, control=self.control, baseline=self.baseline, anchor=self.anchor)

    @model_validator(mode="after")
    def _ray_address_needs_ray(self) -> Study:
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError("ray_address was given, but the executor is not ray: add --executor ray")
        return self

    @field_validator("perturb", mode="before")
    @classmethod
    def _known_perturbations(cls, names: Any) -> Any:
        """Names (or comma lists) checked against the registry; an unknown one lists the known ones."""
        if isinstance(names, str):
            names = [names]
        return (
            parse_perturbations(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else names
        )

    @model_validator(mode="after")
    def _stop_early_needs_a_decision(self) -> Study:
        if not self.stop_early:
            stray = sorted({"look_size", "stop_seed"} & self.model_fields_set)
            if stray:
                raise ValueError(f"{', '.join(stray)} given, but not stop_early: add --stop-early, or drop them")
            return self
        if self.control is None and self.baseline is None:
            raise ValueError(
                "stop_early (--stop-early) stops on a ship decision, and this run has none: name a control "
                "(--control VARIANT, with a candidate beside it) or a --baseline"
            )
        if self.perturb or self.shard is not None:
            raise ValueError("stop_early (--stop-early) cannot be combined with perturb or shard")
        return self

    @model_validator(mode="after")
    def _anchor_needs_a_decision(self) -> Study:
        if self.anchor is not None and self.control is None and self.baseline is None:
            raise ValueError("anchor (--anchor) is a second test beside a control: name a control too (--control)")
        return self

    @model_validator(mode="after")
    def _drop_needs_resume(self) -> Study:
        if self.drop_corrupt and not self.resume:
            raise ValueError("drop_corrupt (--drop-corrupt) only works with resume (--resume)")
        return self

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str | None) -> str | None:
        return None if value is None else store_url(value)

    @field_validator("models")
    @classmethod
    def _model_specs(cls, models: list[str]) -> list[str]:
        for spec in models:
            provider_of(spec)  # a ModelSpecError (a ValueError) names the spec and the grammar
        if len(set(models)) != len(models):
            raise ValueError("a model is given twice")
        return models

    @field_validator("model_settings", mode="before")
    @classmethod
    def _provider_settings(cls, value: Any) -> Any:
        """Each entry through its provider's settings model: an unknown provider or key names its path."""
        if not isinstance(value, dict):
            return value
        return {str(spec): settings_for(str(spec), data) for spec, data in value.items()}

    @model_validator(mode="after")
    def _seed_needs_a_perturbation(self) -> Study:
        if "perturb_seed" in self.model_fields_set and not self.perturb:
            raise ValueError("perturb_seed was given, but no perturbation: add --perturb NAME, or drop the seed")
        return self

    @model_validator(mode="after")
    def _prompts_need_a_model_that_takes_one(self) -> Study:
        if "prompts" in self.model_fields_set and not any(provider_of(m).takes_prompt for m in self.models):
            raise ValueError(
                f"a prompt was given, but no model of this run takes one ({', '.join(self.models)}): "
                "add --model openai:<name>, or drop --prompt"
            )
        return self


class StudyError(UsageError):
    """A study file or flag combination that cannot run (exit code 2)."""


def load_study_file(path: Path) -> dict[str, Any]:
    """Read a TOML or YAML study file into a plain mapping (safe loaders only)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StudyError(f"cannot read study file {path}: {exc}") from exc
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else strict_yaml(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError, ValueError) as exc:
        raise StudyError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise StudyError(f"{path}: a study file holds a mapping")
    return data


def build_study(file_data: dict[str, Any], overrides: dict[str, Any], source: str = "flags") -> Study:
    """Merge flags over the study file and validate; errors name the key."""
    merged = {**file_data, **{k: v for k, v in overrides.items() if v is not None}}
    if overrides.get("gates") and file_data.get("gates"):
        merged["gates"] = {**file_data["gates"], **overrides["gates"]}
    try:
        return Study.model_validate(merged)
    except ValidationError as exc:
        raise StudyError(f"{source}: {'; '.join(map(_problem, exc.errors()))}") from exc


def _problem(error: ErrorDetails) -> str:
    """One validation error as `key.path: message` (settings errors name their own whole path)."""
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, SettingsValueError):
        return str(cause)
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
