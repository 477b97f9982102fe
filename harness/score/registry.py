"""The metric registry: the one home of each scalar figure a variant gets.

An entry names its key, label, direction, display format, whether a `--fail-under` gate may name it,
whether the ship decision can be made on it (`--decide-on`: a paired, per-unit comparison against the
control, computed by `harness.score.decide`), whether per-group breakdowns (`per_scenario`, `per_tag`, `per_dataset`) show it, and how to compute it
from a variant's frames. `summary.json`, the gates, the console table, the report's headline and
summary.md all read this table, so a new metric is one `register(...)` call.

This module imports no heavy library: the CLI reads labels and gateable keys from it at start-up, and
the compute functions load `harness.score.metrics` (pandas, scikit-learn) only when they run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pandas as pd


class Direction(StrEnum):
    HIGHER = "higher"
    LOWER = "lower"


class Format(StrEnum):
    """How a value is shown: a fraction as % (its differences in pp), a plain score, a count or milliseconds."""

    FRACTION = "fraction"
    SCORE = "score"
    COUNT = "count"
    MS = "ms"


class Frames(NamedTuple):
    """One variant's (or one group's) rows: quality results and gold claims, scored or not."""

    quality: pd.DataFrame
    claims: pd.DataFrame


class Value(NamedTuple):
    value: float | None
    ci: list[float] | None = None


Compute = Callable[[Frames, bool], Value]
"""(frames, with_ci) -> the figure; with_ci False skips the bootstrap (breakdowns show no CI)."""
PairedCompute = Callable[["pd.DataFrame", dict[str, dict[str, list[str]]]], Any]
"""(paired units of a candidate and its control, gold claim labels) -> its per-case counts
(`harness.score.decide.CaseCounts`, None when no unit measures it), read by the one paired rule."""


@dataclass(frozen=True)
class MetricSpec:
    key: str
    label: str
    help: str
    direction: Direction
    format: Format
    compute: Compute
    has_ci: bool = False
    """The summary holds `<key>_ci` beside the figure."""
    gateable: bool = False
    headline: bool = False
    """One of the report's headline KPIs (the others are shown in the headline table only)."""
    console: bool = False
    """A column of `vbench run`'s closing table."""
    grouped: bool = False
    """Shown in every per-group breakdown."""
    notes: bool = False
    """A column of the closing notes (summary.md beside report.html)."""
    short: str = ""
    """Column header where space is short (console, summary.md); the label when empty."""
    paired: PairedCompute | None = None
    """How it is compared unit by unit with a control (`harness.score.decide`): the metrics `--decide-on` may
    name. None: not decidable."""

    @property
    def higher_is_better(self) -> bool:
        return self.direction is Direction.HIGHER

    @property
    def percent(self) -> bool:
        return self.format is Format.FRACTION

    @property
    def column(self) -> str:
        return self.short or self.label

    def describe(self) -> dict[str, object]:
        """What summary.json records of the metric, so a reader knows what its figures meant."""
        return {
            "key": self.key, "label": self.label, "direction": self.direction.value, "format": self.format.value,
            "has_ci": self.has_ci, "gateable": self.gateable, "compute": getattr(self.compute, "__name__", ""),
            **({"decidable": True, "paired": getattr(self.paired, "__name__", "")} if self.paired else {}),
        }  # fmt: skip


_REGISTRY: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    """Add a metric; a key already registered (or clashing with its CI key) is an error."""
    if spec.key in _REGISTRY or spec.key.endswith("_ci"):
        raise ValueError(f"metric {spec.key!r} is already registered or ends in _ci")
    _REGISTRY[spec.key] = spec
    return spec


def unregister(key: str) -> None:
    del _REGISTRY[key]


@contextmanager
def registered(spec: MetricSpec) -> Iterator[MetricSpec]:
    """A metric registered for the duration of a block (tests, one-off analyses)."""
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.key)


def metrics() -> tuple[MetricSpec, ...]:
    """Every registered metric, in registration order (the order tables show them)."""
    return tuple(_REGISTRY.values())


def metric(key: str) -> MetricSpec:
    return _REGISTRY[key]


def gateable() -> tuple[str, ...]:
    return tuple(m.key for m in _REGISTRY.values() if m.gateable)


def decidable() -> tuple[str, ...]:
    """The metrics the ship decision may gate on (`--decide-on`, a study's `gates.decide_on`)."""
    return tuple(m.key for m in _REGISTRY.values() if m.paired)


def summary_keys() -> tuple[str, ...]:
    """The keys registered metrics put on a variant of summary.json (each figure, then its CI)."""
    return tuple(k for m in _REGISTRY.values() for k in ((m.key, f"{m.key}_ci") if m.has_ci else (m.key,)))


def compute_all(frames: Frames) -> dict[str, float | list[float] | None]:
    """Every registered figure of one variant, with CIs where the metric has one."""
    out: dict[str, float | list[float] | None] = {}
    for m in _REGISTRY.values():
        value = m.compute(frames, m.has_ci)
        out[m.key] = value.value
        if m.has_ci:
            out[f"{m.key}_ci"] = value.ci
    return out


def compute_grouped(frames: Frames) -> dict[str, float | None]:
    """The grouped metrics of one group, without CIs."""
    return {m.key: m.compute(frames, False).value for m in _REGISTRY.values() if m.grouped}


# --- the built-in metrics ------------------------------------------------------------------------


def _lazy(module: str, name: str) -> Any:
    """`<module>.<name>`, imported on first call (the implementations load pandas and scikit-learn)."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    call.__name__ = name
    return call


def _builtin(
    key: str,
    label: str,
    help: str,
    direction: Direction,
    fmt: Format = Format.FRACTION,
    paired: str = "",
    **flags: bool | str,
) -> None:
    """A built-in metric: computed by `harness.score.metrics.<key>`, compared by `harness.score.decide.<paired>`."""
    compare = _lazy("harness.score.decide", paired) if paired else None
    compute = _lazy("harness.score.metrics", key)
    register(MetricSpec(key, label, help, direction, fmt, compute, paired=compare, **flags))  # type: ignore[arg-type]


_builtin(
    "verdict_accuracy", "Verdict accuracy", "effective verdict (after gatekeeper and policy) in the gold set",
    Direction.HIGHER, has_ci=True, gateable=True, headline=True, console=True, grouped=True, notes=True,
    short="verdict acc", paired="paired_verdict_accuracy",
)  # fmt: skip
_builtin(
    "model_verdict_accuracy", "Model verdict accuracy", "the model's own verdict in the gold set",
    Direction.HIGHER, has_ci=True, gateable=True, headline=True, console=True, grouped=True, notes=True,
    short="model verdict acc",
)  # fmt: skip
_builtin(
    "claim_accuracy", "Claim accuracy", "claim checks whose class is one of the gold labels",
    Direction.HIGHER, has_ci=True, gateable=True, headline=True, console=True, grouped=True, notes=True,
    short="claim acc", paired="paired_claim_accuracy",
)  # fmt: skip
_builtin(
    "unsafe_pass_rate", "Unsafe PASS rate", "PASS where the gold verdict forbids PASS (lower is better)",
    Direction.LOWER, has_ci=True, headline=True, console=True, notes=True, short="unsafe PASS",
    paired="paired_unsafe_pass_rate",
)  # fmt: skip
_builtin(
    "grounding_bacc", "Grounding bAcc", "balanced accuracy of supported vs not, as LLM-AggreFact reports it",
    Direction.HIGHER, has_ci=True, gateable=True, headline=True, notes=True, short="grounding bAcc",
)  # fmt: skip
_builtin(
    "macro_f1", "Macro-F1 (claims)", "unweighted mean F1 over the six classes",
    Direction.HIGHER, Format.SCORE, gateable=True, console=True, notes=True, short="macro-F1",
)  # fmt: skip
_builtin(
    "cohen_kappa", "Cohen's kappa (claims)", "agreement with the gold labels beyond chance",
    Direction.HIGHER, Format.SCORE, gateable=True,
)  # fmt: skip
_builtin(
    "invalid_reply_rate", "Invalid replies", "replies that were not valid JSON of the contract",
    Direction.LOWER, console=True, short="invalid",
)  # fmt: skip
_builtin(
    "guard_intervention_rate", "Claim-guard interventions", "results whose verdict the claim guard changed",
    Direction.LOWER,
)  # fmt: skip
