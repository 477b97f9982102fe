"""The one gate model: what a run is gated and decided on, from the study to the manifest to scoring.

A study's `gates` table, the manifest's `settings.gates` and what scoring applies are the same `Gates`; the
margin is in percentage points everywhere it is written (study files, flags, manifests) and turned into the
fraction the decision computes with in one place, `Gates.margin_fraction`. `GateSettings` adds the control
side a run's decisions pair with (a variant of the run, a baseline folder), which the manifest keeps beside
the gates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

DEFAULT_DECIDE_ON: tuple[str, ...] = ("verdict_accuracy", "unsafe_pass_rate")
"""The decision's default metrics; which may be named is the metric registry's (`harness.score.registry.decidable`,
checked by `harness.score.gates.check_gate_names` when a study is built)."""
DEFAULT_MARGIN_PP = 5.0
"""The ship decision's non-inferiority margin in percentage points (README, "The ship decision")."""


class Gates(BaseModel):
    """Thresholds on figures and the settings of the ship decision; margin in percentage points."""

    model_config = ConfigDict(extra="forbid")
    fail_under: dict[str, float] = Field(default_factory=dict)
    max_unsafe_pass: float | None = None
    max_error_rate: float = Field(
        default=0.0, ge=0.0, le=1.0, description="share of quality cases allowed to end with no model reply"
    )
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0, description="significance level of decisions")
    margin: float = Field(
        default=DEFAULT_MARGIN_PP,
        ge=0.0,
        le=100.0,
        description="non-inferiority margin of the ship decision, in percentage points (docs/manual/ship-decision.md)",
    )
    require_ship: bool = Field(default=False, description="an inconclusive decision fails the run too")
    all_pairs: bool = Field(
        default=False,
        description="compare every pair of variants even past a handful of them (by default each with the control)",
    )
    decide_on: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DECIDE_ON),
        min_length=1,
        description="the metrics a candidate is gated on",
    )

    @model_serializer(mode="wrap")
    def _all_pairs_when_asked(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`all_pairs` is written only when asked for, so a manifest written before it existed reads back the same."""
        data: dict[str, Any] = handler(self)
        if not self.all_pairs:
            data.pop("all_pairs", None)
        return data

    @property
    def margin_fraction(self) -> float:
        """The margin as the decision computes with it: 5 points is 0.05."""
        return self.margin / 100


class GateSettings(BaseModel):
    """What scoring applies to a finished run: its gates, and the control side its decisions pair with."""

    model_config = ConfigDict(extra="forbid")
    gates: Gates = Field(default_factory=Gates)
    control: str | None = None
    """The control variant (of this run, or of `baseline`); None: no decision unless a baseline names one."""
    baseline: Path | None = None
    """A finished run folder the candidates are decided against."""
    anchor: Path | None = None
    """A fixed reference run folder each candidate is also decided against (`harness.score.decide.with_anchor`)."""

    @classmethod
    def from_manifest_settings(cls, settings: Any) -> GateSettings:
        """The settings a run recorded in its manifest (`harness.run.log.ManifestSettings`: its `gates`, `control`
        and `baseline`; a manifest written without gates was gated by the defaults). A run that stopped early
        decided at its design's last level (`stop_early.levels`), not at the study's alpha: scored again, it decides
        there too, so its summary reads as the run's did."""
        gates = settings.gates or Gates()
        level = settings.stop_early.final_level if settings.stop_early is not None else None
        if level is not None:
            gates = gates.model_copy(update={"alpha": level})
        return cls(
            gates=gates,
            control=settings.control,
            baseline=Path(settings.baseline) if settings.baseline else None,
            anchor=Path(settings.anchor) if getattr(settings, "anchor", None) else None,
        )
