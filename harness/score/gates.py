"""CI gates: thresholds on figures, policy conformance and the ship decisions, each a `GateResult`.

What a run is gated on is `harness.run.gates.Gates` (the settings); this module applies it and makes every gate
row summary.json holds. The paired comparison with a control (a variant of this run or a baseline run) is a
decision, not a threshold (`harness.score.decide`): its gate only reads the decision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness import UsageError
from harness.run.gates import Gates
from harness.run.log import Manifest
from harness.score.certificate import policy_tally
from harness.score.registry import Direction, decidable, gateable, metric
from harness.score.summary_model import (
    CompletenessGate,
    Conformance,
    Decision,
    DecisionGate,
    GateResult,
    PolicyGate,
    Summary,
    ThresholdGate,
    Unfinished,
    VariantSummary,
)


class GateError(UsageError):
    """A gate that names an unknown metric (bad usage, exit 2)."""


def parse_gate(text: str) -> tuple[str, float]:
    """`METRIC=VALUE` for a registered gateable metric (`harness.score.registry`)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise GateError(f"gate {text!r}: use METRIC=VALUE, e.g. verdict_accuracy=0.8")
    if name not in gateable():
        raise GateError(f"gate {text!r}: unknown metric {name!r}; one of {', '.join(gateable())}")
    try:
        return name, float(value)
    except ValueError as exc:
        raise GateError(f"gate {text!r}: {value!r} is not a number") from exc


def check_gate_names(fail_under: dict[str, float], source: str, decide_on: Sequence[str] = ()) -> None:
    """Every `fail_under` key of a study is a registered gateable metric, and every `decide_on` entry a decidable
    one (else GateError, exit 2)."""
    for name in fail_under:
        if name not in gateable():
            raise GateError(f"{source}: gates.fail_under.{name}: unknown metric; one of {', '.join(gateable())}")
    for i, name in enumerate(decide_on):
        if name not in decidable():
            raise GateError(
                f"{source}: gates.decide_on[{i}]: {name!r} is not a metric the decision can be made on; "
                f"one of {', '.join(decidable())}"
            )


def policy_gate(conformance: Conformance, manifest: Manifest | None = None) -> PolicyGate:
    """Policy conformance as a gate. With no policy case scored it checked nothing and says so. It holds when the
    user's selection (case folders, filters, a shard) held no policy case, naming that selection; it fails when
    policy cases were selected and none was scored (or the run's selection is not known)."""
    cases, passed_cases = conformance.policy_cases, conformance.policy_passed
    others = (
        f"{conformance.invariant_violations} invariant violations, "
        f"{conformance.quality_expectation_mismatches} quality cases off their deterministic expectations"
    )

    def gate(**result: Any) -> PolicyGate:
        return PolicyGate(gate="policy_conformance", variant=None, value=passed_cases, threshold=cases, **result)

    if cases:
        return gate(passed=conformance.passed, detail=f"{policy_tally(passed_cases, cases)}, {others}")
    left_out = _selection_without_policy(manifest)
    if left_out is not None:
        why = f"not checked: {left_out} selects no policy case"
        return gate(passed=conformance.passed, detail=f"{why}; {others}", checked=False)
    why = "not checked: no policy case was scored, so conformance was not measured"
    return gate(passed=False, detail=f"{why}; {others}", checked=False)


def _selection_without_policy(manifest: Manifest | None) -> str | None:
    """The user's selection that holds no policy case to score (filter, case folders, or a shard whose merge scores
    them), or None when it held some or is not known."""
    if manifest is None:
        return None
    if manifest.policy_cases == 0:
        return f"the filter {', '.join(manifest.filters)}" if manifest.filters else ", ".join(manifest.case_dirs)
    shard = manifest.settings.shard
    return f"shard {shard.shard} (the merged run scores the policy cases)" if shard else None


def threshold_gate(variant: VariantSummary, name: str, threshold: float) -> ThresholdGate:
    """One registered metric of one variant against its threshold; a missing figure fails. A lower-is-better
    metric's threshold is a ceiling (`--fail-under` names the worst acceptable figure; `--max-unsafe-pass` is the
    ceiling of `unsafe_pass_rate`)."""
    value = variant.figure(name)
    lower = metric(name).direction is Direction.LOWER
    return ThresholdGate(
        gate=f"{name}{'<=' if lower else '>='}{threshold}",
        variant=variant.name,
        value=value,
        threshold=threshold,
        passed=value is not None and (value <= threshold if lower else value >= threshold),
        detail=f"{name} = {_fmt(value)}",
    )


def error_rate_gate(variant: VariantSummary, max_error_rate: float, planned: int = 0) -> ThresholdGate | None:
    """The share of quality cases with no model reply against its ceiling (None without quality cases). `planned`:
    the quality cases an unfinished run should have had; those it never sent got no reply either."""
    cases = max(variant.quality_cases, planned)
    if not cases:
        return None
    missing = cases - variant.quality_cases
    rate = (variant.errors + missing) / cases
    return ThresholdGate(
        gate=f"error_rate<={max_error_rate}",
        variant=variant.name,
        value=rate,
        threshold=max_error_rate,
        passed=rate <= max_error_rate,
        detail=f"{variant.errors + missing} of {cases} quality cases got no model reply"
        + (f" ({missing} never run)" if missing else "")
        + (" (an incomplete measurement)" if variant.errors or missing else ""),
    )


def _planned_quality_cases(manifest: Manifest | None, summary: Summary) -> int:
    """The quality cases each variant of an unfinished run should have had (0 when the run is finished or its
    plan is not known; a shard holds only some of each variant's cases, so it is judged by its unit count)."""
    if manifest is None or summary.run is None or summary.run.unfinished is None or manifest.settings.shard:
        return 0
    return manifest.quality_cases


def completeness_gate(unfinished: Unfinished | None) -> list[GateResult]:
    """An unfinished run (fewer results than it planned: `missing_units`) fails, whatever its figures say."""
    if unfinished is None:
        return []
    return [
        CompletenessGate(
            gate="run_finished",  # set, so summary.json (which holds the keys that were set) names the gate
            value=unfinished.results,
            threshold=unfinished.planned,
            passed=False,
            detail=f"unfinished: {unfinished.results:,} of {unfinished.planned:,} results; finish it with "
            "`vbench run` and the same settings, --out this folder and --resume",
        )
    ]


def threshold_gates(summary: Summary, gates: Gates, manifest: Manifest | None = None) -> list[GateResult]:
    """Each threshold applied to each variant; a missing figure fails its gate. `manifest`: the run's, whose case
    selection tells a policy gate the user left out from one that found nothing."""
    rows: list[GateResult] = [policy_gate(summary.conformance, manifest)]
    planned = _planned_quality_cases(manifest, summary)
    for variant in summary.variants:
        rows += [threshold_gate(variant, name, threshold) for name, threshold in gates.fail_under.items()]
        if gates.max_unsafe_pass is not None:
            rows.append(threshold_gate(variant, "unsafe_pass_rate", gates.max_unsafe_pass))
        error_gate = error_rate_gate(variant, gates.max_error_rate, planned)
        if error_gate is not None:
            rows.append(error_gate)
    return rows


def decision_gates(decisions: Sequence[Decision], require_ship: bool) -> list[DecisionGate]:
    """One gate per decision: `block` fails it, and `inconclusive` too under --require-ship."""
    from harness.score.decide import headline  # the decision engine loads pandas: only when one decided

    return [
        DecisionGate(
            gate="ship_decision",
            variant=d.candidate,
            value=d.decision,
            threshold=d.control,
            passed=d.decision == "ship" or (d.decision == "inconclusive" and not require_ship),
            detail=f"{d.decision} against {d.control}: {headline(d)}",
        )
        for d in decisions
    ]


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value + 0.0:.4f}"  # + 0.0 turns -0.0 into 0.0


def _fmt_ci(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"[{_fmt(ci[0])}, {_fmt(ci[1])}]"
