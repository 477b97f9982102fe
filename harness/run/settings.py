"""The manifest's settings of one component each, typed: the sequential design and its stop, the executor, the shard.

Like `ManifestSettings` itself, each part reads a manifest written before one of its keys existed, keeps a key
this version does not know as it came, and writes back only the keys that were set (a manifest keeps its bytes).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class SettingsPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set or k in (self.__pydantic_extra__ or {})}


class StopEarlySettings(SettingsPart):
    """A `--stop-early` run's sequential design and, once it ended, its last look: where and why it stopped
    (`harness.score.early_stop.look_record`, with the requests sent and saved: `harness.run.looks.stop_record`).
    A summary keeps the same record."""

    look_size: int | None = None
    seed: int | None = None
    method: str | None = None
    look: int | None = None
    """The look the run ended at (None: the run has not ended, or ended before its first look)."""
    looks: int | None = None
    levels: list[int | float] | None = None
    """The significance level each look decides at; the last one is what the run's decisions are made at."""
    stop: bool | None = None
    reason: str | None = None
    cases_run: int | None = None
    cases_planned: int | None = None
    text: str | None = None
    candidates: dict[str, Any] | None = None
    requests_planned: int | None = None
    requests_sent: int | None = None
    requests_saved: int | None = None

    @property
    def ended(self) -> bool:
        """Whether the record says where and why the run stopped sending cases."""
        return self.look is not None

    @property
    def final_level(self) -> float | None:
        """The level of the design's last look (None when the design names none)."""
        return float(self.levels[-1]) if self.levels else None

    def with_stop(self, record: dict[str, Any]) -> StopEarlySettings:
        """The design with the run's last look recorded on it."""
        return StopEarlySettings.model_validate({**self.model_dump(), **record})


class ExecutorSettings(SettingsPart):
    """What ran the units: its name ("local", "ray") and, once a cluster joined, its version and address."""

    name: str


class ShardSettings(SettingsPart):
    """The shard a run made (`--shard I/N`): its units, and the whole plan's size and digest the merge checks."""

    shard: str
    index: int
    count: int
    units: int | None = None
    plan_units: int | None = None
    plan_digest: str | None = None
