"""The kit's own strength: `vbench certify` catches every seeded fault of the bundled SUT.

Each fault runs in its own SUT process (tests/kit/faulty_sut.py) and is certified on the whole policy
corpus. `python -m tests.kit.test_seeded_faults` prints the mutation table.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.kit.faulty_sut import FAULTS
from tests.kit.helpers import ROOT, sut_process


def certify_fault(fault: str, tmp: Path) -> dict[str, Any]:
    """Certify the SUT with `fault` seeded; the exit code, the certificate and what caught it."""
    port_file = tmp / f"{fault}.port"
    args = [sys.executable, "-m", "tests.kit.faulty_sut", "--fault", fault, "--port-file", str(port_file)]
    out = tmp / fault
    with sut_process(args, port_file) as url:
        code = main(["certify", "--sut", url, "--cases", str(ROOT / "cases" / "policy"), "--out", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    cert = json.loads((out / "certificate.json").read_text())
    failures = summary["conformance"]["failures"]
    return {
        "fault": fault,
        "rule": FAULTS[fault][0],
        "code": code,
        "status": cert["status"],
        "sut": cert["sut"]["name"],
        "failed": len(failures),
        "cases": summary["conformance"]["policy_cases"],
        "example": failures[0] if failures else None,
    }


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_certify_catches_the_seeded_fault(fault: str, tmp_path: Path) -> None:
    row = certify_fault(fault, tmp_path)
    assert row["sut"].endswith(fault)  # the faulty process answered, not some other SUT
    assert row["code"] == 1 and row["status"] == "failed" and row["failed"] > 0, row


def test_there_are_at_least_twelve_faults() -> None:
    assert len(FAULTS) >= 12


def mutation_table() -> str:
    rows = ["| fault | rule broken | caught | policy cases failed | first failure |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        results = [certify_fault(f, Path(tmp)) for f in sorted(FAULTS)]
    for r in results:
        ex = r["example"] or {}
        first = "; ".join(ex.get("mismatches", []) + ex.get("invariant_violations", []))[:90].replace("|", "/")
        caught = "yes" if r["code"] == 1 else "**no**"
        rows.append(
            f"| `{r['fault']}` | {r['rule']} | {caught} | {r['failed']}/{r['cases']} | {ex.get('case_id', '')}: {first} |"
        )
    score = sum(r["code"] == 1 for r in results)
    rows.append(f"\nMutation score: {score}/{len(results)}")
    return "\n".join(rows)


if __name__ == "__main__":
    print(mutation_table())
