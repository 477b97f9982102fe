"""The report's robustness table: per variant and perturbation, the flip rates and the accuracy under it (data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def robustness_rows(variants: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant × perturbation of summary.json's `variants[].robustness` (none without --perturb)."""
    return [
        {"variant": v["name"], "perturbation": name, **figures}
        for v in variants
        for name, figures in (v.get("robustness") or {}).items()
    ]
