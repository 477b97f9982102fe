"""Prompt regression: the control side (this run or a finished one), the pre-flight check and the decisions.

`preflight` runs before any request is sent and raises `PairingError` when a
candidate has no control or no case could be paired; `make_decisions` runs
after the run, from the run log, and uses the very same pairing rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.run.folder import MANIFEST_FILE, read_manifest
from harness.run.log import Manifest, VariantInfo
from harness.score.decide import Decision, decide, what_changed
from harness.score.outcomes import load_outcomes
from harness.score.pairing import Pair, PairingError, resolve_pairs, variants_from_names


@dataclass(frozen=True)
class ControlRun:
    """A finished run used as the control side: its identity, variants and unit outcomes."""

    path: Path
    manifest: Manifest | None
    variants: list[VariantInfo]
    units: pd.DataFrame

    @property
    def label(self) -> str:
        return str(self.path) + (f" (run {self.manifest.run_id})" if self.manifest else "")


def load_control_run(path: Path) -> ControlRun:
    """A baseline folder: manifest.json when kept (older baselines: variants read from the outcome names)."""
    if not path.is_dir():
        raise PairingError(f"--baseline {path}: no such run folder")
    try:
        units = load_outcomes(path)
    except FileNotFoundError as exc:
        raise PairingError(f"--baseline {path}: {exc}") from exc
    if units.empty or "variant" not in units:
        raise PairingError(f"--baseline {path}: its outcomes hold no result to pair with")
    manifest = read_manifest(path) if (path / MANIFEST_FILE).exists() else None
    variants = list(manifest.variants) if manifest else variants_from_names(sorted(set(units.get("variant", []))))
    return ControlRun(path, manifest, variants, units)


def preflight(
    variants: Sequence[VariantInfo],
    control: str | None,
    baseline: ControlRun | None,
    quality_hashes: Mapping[str, str],
) -> list[Pair]:
    """The pairs a run will decide on; raises PairingError (exit 2) before any request when something cannot pair."""
    pairs = resolve_pairs(variants, control, baseline.variants if baseline else None)
    if baseline is not None and pairs:
        units = baseline.units
        for ctl in sorted({p.control for p in pairs}):
            side = units[units["variant"] == ctl]
            shared = [
                cid for cid, h in zip(side["case_id"], side["case_hash"], strict=True) if quality_hashes.get(cid) == h
            ]
            if not shared:
                raise PairingError(
                    f"--baseline {baseline.path}: no quality case of this run has the same id and content as one of "
                    f"the baseline's {ctl} ({side['case_id'].nunique()} cases there, {len(quality_hashes)} here): "
                    "nothing can be paired. Was the baseline made on another corpus or filter?"
                )
    if not quality_hashes and pairs:
        raise PairingError("a decision needs quality cases, and no quality case is selected")
    return pairs


def make_decisions(
    manifest: Manifest,
    gold: dict[str, dict[str, list[str]]],
    units: pd.DataFrame,
    control: str | None,
    baseline: ControlRun | None,
    *,
    gated: tuple[str, ...],
    margin: float,
    alpha: float,
) -> list[Decision]:
    """One decision per candidate, from this run's unit outcomes and the control's (`gold`: claim labels by case)."""
    pairs = resolve_pairs(manifest.variants, control, baseline.variants if baseline else None)
    by_name = {v.name: v for v in manifest.variants}
    decisions = []
    for pair in pairs:
        if pair.control_side == "baseline" and baseline is not None:
            control_units, control_info = baseline.units, {v.name: v for v in baseline.variants}[pair.control]
            control_manifest, control_run = baseline.manifest, baseline.label
        else:
            control_units, control_info = units, by_name[pair.control]
            control_manifest, control_run = manifest, f"this run ({manifest.run_id})"
        decisions.append(
            decide(
                units[units["variant"] == pair.candidate],
                control_units[control_units["variant"] == pair.control],
                gold,
                candidate=pair.candidate,
                control=pair.control,
                control_run=control_run,
                changed=what_changed(by_name[pair.candidate], control_info, manifest, control_manifest),
                gated=gated,
                margin=margin,
                alpha=alpha,
            )
        )
    return decisions
