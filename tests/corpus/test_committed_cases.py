"""Every committed case agrees with what it pins down without a model (what `vbench cases check` runs).

The 108 policy cases are the conformance suite: a change to the policy that
breaks one fails here, not only in a separate CLI step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus.loader import load_cases
from harness.run.conformance import case_check_problems

CASES = Path(__file__).resolve().parents[2] / "cases"


@pytest.mark.parametrize("folder", ["policy", "quality", "generated", "external"])
def test_committed_cases_agree(folder: str) -> None:
    cases = load_cases([CASES / folder])
    assert cases, f"no case under cases/{folder}"
    problems = {case.id: found for case in cases if (found := case_check_problems(case))}
    assert problems == {}
