"""The report's agreement section as data: `agreement.json` (`vbench agreement`) in rows, the most disagreed
claims first, each linked to its page in the labelling app (`vbench label serve`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness import UsageError
from harness.report.labelling import DEFAULT_PORT, HOST
from harness.score.agreement import alpha_text, kappa_text, read_agreement

DEFAULT_LABEL_URL = f"http://{HOST}:{DEFAULT_PORT}"
"""Where `vbench label serve` listens by default: the links of the section point there."""
SHOWN_DISAGREEMENTS = 50


def agreement_section(path: Path, label_url: str = DEFAULT_LABEL_URL) -> dict[str, Any]:
    """Rows for the template; ValueError naming the file when it is not an agreement.json."""
    try:
        report = read_agreement(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable agreement.json ({str(exc).splitlines()[0]})") from None
    base = label_url.rstrip("/")
    claims = [
        {**d, "href": f"{base}/case/{quote(d['case_id'])}", "labels": sorted(d["labels"].items())}
        for d in report.disagreements
        if d["disagreement"] > 0
    ]
    verdicts = {**report.verdicts, "pairs": _read(report.verdicts["pairs"]),
                "vs_verifier": _read(report.verdicts["vs_verifier"])}  # fmt: skip
    return {
        "source": str(path),
        "annotators": report.annotators,
        "cases": report.cases,
        "pairs": _read(report.pairs),
        "alpha": {**report.krippendorff_alpha, "text": alpha_text(report.krippendorff_alpha)},
        "vs_verifier": _read(report.vs_verifier),
        "verdicts": verdicts,
        "disagreements": claims[:SHOWN_DISAGREEMENTS],
        "more": max(0, len(claims) - SHOWN_DISAGREEMENTS),
    }


def _read(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with its kappa as every screen prints it (`kappa_text`: one precision, undefined said)."""
    return [{**row, "kappa_text": kappa_text(row)} for row in rows]
