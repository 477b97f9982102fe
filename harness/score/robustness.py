"""Robustness: how often a variant's answer changes under a perturbation that must not change it.

Each perturbed unit (variant × case × epoch × perturbation) is paired with the same variant's answer on the
same case and epoch as written. A verdict flips when the two verdicts differ; a claim label flips when the
label given to a gold-labelled claim differs (claim ids read back through the unit's `claim_id_map`).
Rates are pooled over units with 95% CIs that resample cases (`stats.ratio_ci`), as every other rate here.
Accuracy under the perturbation is computed by the same functions as the headline accuracy.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.run.log import ResultRecord
from harness.score.frames import claims_frame, quality_frame
from harness.score.headline import is_headline
from harness.score.registry import Frames, metric
from harness.score.stats import ratio_ci
from harness.score.summary_model import PerturbationFigures, VariantSummary

Key = tuple[str, str, int]


def claim_flips(original: ResultRecord, perturbed: ResultRecord) -> tuple[int, int]:
    """(flipped, compared) over the original's gold-labelled claims."""
    back = perturbed.claim_id_map or {}
    answered = {back.get(cid, cid): label for cid, label in perturbed.claims.items()}
    ids = list(original.gold.claims or {})
    return sum(original.claims.get(cid) != answered.get(cid) for cid in ids), len(ids)


def _rate(per_case: dict[str, list[int]], num: int, den: int) -> tuple[float | None, list[float] | None]:
    """Pooled rate and its CI; cases in id order, so the same log gives the same interval whatever order it has."""
    ordered = [per_case[cid] for cid in sorted(per_case)]
    nums = np.array([v[num] for v in ordered], dtype=float)
    dens = np.array([v[den] for v in ordered], dtype=float)
    if dens.sum() == 0:
        return None, None
    ci = ratio_ci(nums, dens)
    return float(nums.sum() / dens.sum()), (list(ci) if ci else None)


def perturbation_figures(pairs: Sequence[tuple[ResultRecord, ResultRecord]]) -> PerturbationFigures:
    """The figures of one variant under one perturbation, from (original, perturbed) pairs."""
    per_case: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # verdict flips, units, claim flips, claims
    for original, perturbed in pairs:
        counts = per_case[original.case_id]
        counts[0] += original.verdict != perturbed.verdict
        counts[1] += 1
        flipped, compared = claim_flips(original, perturbed)
        counts[2] += flipped
        counts[3] += compared
    out: dict[str, Any] = {"cases": len(per_case), "units": len(pairs)}
    out["verdict_flip_rate"], out["verdict_flip_rate_ci"] = _rate(per_case, 0, 1)
    out["claim_flip_rate"], out["claim_flip_rate_ci"] = _rate(per_case, 2, 3)
    units = [p for _, p in pairs]
    frames = Frames(quality_frame(units), claims_frame(units))
    for name in ("verdict_accuracy", "claim_accuracy"):
        out[name], out[f"{name}_ci"] = metric(name).compute(frames, True)
    return PerturbationFigures.model_validate(out)


def robustness(records: Sequence[ResultRecord]) -> dict[str, dict[str, PerturbationFigures]]:
    """variant -> perturbation -> figures. Units without a scored answer on either side are left out."""
    scored = [r for r in records if r.kind == "quality" and r.error is None]
    originals: dict[Key, ResultRecord] = {(r.variant, r.case_id, r.epoch): r for r in scored if is_headline(r)}
    pairs: dict[str, dict[str, list[tuple[ResultRecord, ResultRecord]]]] = defaultdict(lambda: defaultdict(list))
    for r in scored:
        if r.perturbation is None:
            continue
        original = originals.get((r.variant, r.case_id, r.epoch))
        if original is not None:
            pairs[r.variant][r.perturbation].append((original, r))
    return {
        variant: {name: perturbation_figures(units) for name, units in sorted(by_name.items())}
        for variant, by_name in pairs.items()
    }


def add_robustness(
    variants: Sequence[VariantSummary], records: Sequence[ResultRecord], perturbations: Sequence[str]
) -> None:
    """Put `robustness` on every variant of summary.json: {perturbation: figures}, one entry per asked name.

    A perturbation the run asked for that has no paired unit for a variant still gets an entry (cases 0,
    rates null), so a script reading `variants[].robustness.<name>` finds it.
    """
    if not perturbations:
        return
    figures = robustness(records)
    empty = perturbation_figures([])
    for variant in variants:
        found = figures.get(variant.name, {})
        variant.robustness = {name: found.get(name, empty) for name in perturbations}
