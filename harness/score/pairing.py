"""Which candidate is judged against which control: one rule for the pre-flight check and for scoring.

A control is named by `--control VARIANT` (a variant of this run, or of the
baseline run when `--baseline` is given) or `@PROMPT` (per model, its variant
with that prompt). With `--baseline` and no `--control`, each candidate pairs
with the baseline variant of the same name, else the one of the same model.
Anything that cannot be paired is an error before any request is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness import UsageError
from harness.run.log import VariantInfo


class PairingError(UsageError):
    """A candidate without a control, or a control that names nothing (bad usage, exit 2)."""


@dataclass(frozen=True)
class Pair:
    candidate: str
    control: str
    control_side: str  # "run" (a variant of this run) or "baseline"


def _names(variants: Sequence[VariantInfo]) -> str:
    return ", ".join(v.name for v in variants) or "(none)"


def _sides(run: Sequence[VariantInfo], baseline: Sequence[VariantInfo] | None) -> str:
    text = f"this run's variants: {_names(run)}"
    return text + (f"; the baseline's variants: {_names(baseline)}" if baseline is not None else "")


def _by_prompt(variants: Sequence[VariantInfo], model: str, prompt: str) -> VariantInfo | None:
    return next((v for v in variants if v.model == model and v.prompt == prompt), None)


def resolve_pairs(
    run: Sequence[VariantInfo], control: str | None, baseline: Sequence[VariantInfo] | None
) -> list[Pair]:
    """(candidate, control) pairs; [] when no control and no baseline were asked for (no decision to make)."""
    if control is None and baseline is None:
        return []
    if baseline is None:
        return _in_run(run, control or "")
    return _against_baseline(run, control, baseline)


def _in_run(run: Sequence[VariantInfo], control: str) -> list[Pair]:
    if control.startswith("@"):
        prompt, pairs, unpaired = control[1:], [], []
        for variant in run:
            ctl = _by_prompt(run, variant.model, prompt)
            if ctl is None:
                unpaired.append(variant.name)
            elif ctl.name != variant.name:
                pairs.append(Pair(variant.name, ctl.name, "run"))
        if unpaired:
            raise PairingError(
                f"--control {control}: no variant with prompt {prompt!r} on the model of {', '.join(unpaired)}; "
                f"{_sides(run, None)}. Name the control variant itself, or add --prompt {prompt}"
            )
    else:
        if control not in {v.name for v in run}:
            raise PairingError(f"--control {control}: no such variant; {_sides(run, None)}")
        pairs = [Pair(v.name, control, "run") for v in run if v.name != control]
    if not pairs:
        raise PairingError(f"--control {control}: no candidate to judge against it; {_sides(run, None)}")
    return pairs


def _against_baseline(run: Sequence[VariantInfo], control: str | None, baseline: Sequence[VariantInfo]) -> list[Pair]:
    pairs, problems = [], []
    for variant in run:
        if control is None:
            same_name = [b for b in baseline if b.name == variant.name]
            same_model = [b for b in baseline if b.model == variant.model]
            found = same_name or same_model
            if len(found) != 1:
                why = "none" if not found else f"{len(found)} ({_names(found)}); name one with --control"
                problems.append(f"{variant.name}: baseline variants of model {variant.model}: {why}")
                continue
            pairs.append(Pair(variant.name, found[0].name, "baseline"))
        elif control.startswith("@"):
            ctl = _by_prompt(baseline, variant.model, control[1:])
            if ctl is None:
                problems.append(
                    f"{variant.name}: no baseline variant of model {variant.model} with prompt {control[1:]!r}"
                )
                continue
            pairs.append(Pair(variant.name, ctl.name, "baseline"))
        else:
            if control not in {b.name for b in baseline}:
                raise PairingError(f"--control {control}: not a variant of the baseline; {_sides(run, baseline)}")
            pairs.append(Pair(variant.name, control, "baseline"))
    if problems:
        raise PairingError(
            "cannot pair every candidate with a control: " + "; ".join(problems) + f". {_sides(run, baseline)}"
        )
    return pairs


def variants_from_names(names: Sequence[str]) -> list[VariantInfo]:
    """Variant identities of a baseline kept without a manifest: model and prompt read from the names."""
    out = []
    for name in names:
        model, _, prompt = name.partition("@")
        out.append(VariantInfo(name=name, model=model, prompt=prompt or None))
    return out
