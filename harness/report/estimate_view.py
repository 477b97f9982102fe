"""The report's estimate section as data: `estimate.json` (`vbench estimate`) in rows, each rate with its PPI++
interval beside the human-only one, the labels it is worth and the labels still needed, and the estimate's notes
(how the labels were chosen; a biased order said first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import UsageError
from harness.score.estimate import read_estimate

RATE_TITLES = {
    "verdict_accuracy": "verdict accuracy",
    "unsafe_pass_rate": "unsafe-PASS rate",
    "claim_accuracy": "claim accuracy",
}
"""How the section names each rate; a rate it does not know keeps its name from estimate.json."""


def estimate_section(path: Path) -> dict[str, Any]:
    """Rows for the template; a `UsageError` naming the file when it is not a readable estimate.json."""
    try:
        report = read_estimate(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable estimate.json ({str(exc).splitlines()[0]})") from None
    rates = [
        {
            **rate.model_dump(),
            "title": RATE_TITLES.get(rate.name, rate.name),
            "effective_text": "n/a" if rate.effective_labels is None else f"{rate.effective_labels:.0f}",
            "still_text": "n/a (not reachable)"
            if rate.labels_still_needed is None
            else f"{rate.labels_still_needed}" + (" (every session)" if rate.label_all else ""),
        }
        for rate in report.rates
    ]
    return {
        "source": str(path),
        **report.model_dump(exclude={"rates"}),
        "level": round((1 - report.alpha) * 100),
        "rates": rates,
    }
