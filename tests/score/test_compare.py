"""Comparisons across many variants: Holm's adjustment, the MDE and sample size, the conclusion sentence."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.score.compare import adjust_comparisons, compare_outcomes, conclusion
from harness.score.decide import decide, decision_line
from harness.score.stats import cases_needed, holm, mde_paired_binary
from harness.score.summary_model import Comparison
from harness.score.wording import p_text


def test_holm_against_a_hand_computed_example() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4x0.005=0.02, 3x0.01=0.03, 2x0.03=0.06, max(0.06, 1x0.04)=0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.2]) == [pytest.approx(0.5), None, pytest.approx(0.4)]  # None is not a test
    assert holm([0.6, 0.7]) == [1.0, 1.0] and holm([]) == []


def test_comparisons_gain_adjusted_p_and_mde() -> None:
    rows = adjust_comparisons(
        [
            Comparison(a="a", b="b", mcnemar_p=0.01, claim_accuracy_diff_p=0.2),
            Comparison(a="a", b="c", mcnemar_p=0.04, claim_accuracy_diff_p=None),
        ]
    )
    assert [r.p_adjusted for r in rows] == pytest.approx([0.02, 0.04])
    assert rows[0].claim_accuracy_diff_p_adjusted == pytest.approx(0.2)
    assert rows[1].claim_accuracy_diff_p_adjusted is None
    assert {"p_adjusted", "claim_accuracy_diff_p_adjusted"} <= rows[1].model_fields_set  # written, null or not


def units(variant: str, right: list[bool], hashes: str = "h") -> pd.DataFrame:
    return pd.DataFrame(
        {"variant": variant, "case_id": [f"c{i}" for i in range(len(right))], "case_hash": hashes, "epoch": 1,
         "verdict_correct": right, "model_verdict_correct": right, "claims_right": [float(r) for r in right], "claims_total": 1.0,
         "unsafe_eligible": True, "unsafe_pass": False}
    )  # fmt: skip


def test_compare_outcomes_counts_unpaired_cases_and_reports_the_mde() -> None:
    a, b = units("a", [True] * 20), units("b", [True] * 18 + [False] * 2)
    b.loc[b["case_id"] == "c0", "case_hash"] = "edited"
    row = compare_outcomes(a, b)
    assert (row.cases, row.unpaired_cases) == (19, 1)
    assert row.mde == pytest.approx(mde_paired_binary(19, 2))


def test_cases_needed_inverts_the_mde() -> None:
    for n, discordant in ((136, 0), (136, 20), (500, 60)):
        mde = mde_paired_binary(n, discordant)
        assert cases_needed(mde, discordant / n) == pytest.approx(n, abs=1)
    assert cases_needed(0.05, 0.0) > cases_needed(0.10, 0.0) > 0  # smaller differences need more cases
    with pytest.raises(ValueError):
        cases_needed(0.0, 0.1)


def test_a_comparison_is_the_decision_of_b_against_a() -> None:
    """One engine: the row's outcome and sentence are `decide`'s, its figures the decision's seen as A − B."""
    a, b = units("a", [True] * 20), units("b", [True] * 12 + [False] * 8)
    row = compare_outcomes(a, b)
    want = decide(b, a, {}, candidate="b", control="a", control_run="A", changed={})
    assert row.decision == want.decision == "block" and row.conclusion == decision_line(want)
    assert row.conclusion.startswith("BLOCK b against a: verdict_accuracy: significantly worse, -40.0 pp")
    assert (row.mcnemar_a_only, row.mcnemar_b_only) == (8, 0) and row.verdict_accuracy_diff == 0.4
    assert row.mcnemar_p == pytest.approx(2 * 0.5**8) and row.verdict_accuracy_diff_ci == pytest.approx(
        [-want.metrics["verdict_accuracy"].diff_ci[1], -want.metrics["verdict_accuracy"].diff_ci[0]]
    )
    assert (row.margin, row.alpha) == (0.05, 0.05) and "mcnemar_exact" in row.tests
    same = compare_outcomes(units("a", [True, False, True, True, False]), units("b", [True, False, True, True, False]))
    assert same.decision == "inconclusive" and same.cases_needed == 73
    assert "5 paired cases cannot rule out a loss of 43.4 pp; about 73 are needed" in conclusion(same)


def test_conclusion_of_a_summary_from_before_decided_comparisons_states_figures_only() -> None:
    row = {"a": "x", "b": "y", "cases": 40, "verdict_accuracy_diff": 0.25, "p_adjusted": 0.0004, "mde": 0.1}
    text = conclusion(Comparison.model_validate(row))
    assert (
        text == "x vs y: +25.0 pp verdict accuracy (A − B) on 40 paired cases, p < 0.001; "
        "this summary predates decided comparisons."
    )
    assert "no case could be paired" in conclusion(Comparison(a="x", b="y", cases=0, verdict_accuracy_diff=None))
    assert p_text(0.0) == "< 0.001" and p_text(0.0421) == "0.042" and p_text(None) == "n/a"
