"""The family study at test size: Hsu's MCB ranking against variants of the judge of known skill."""

from __future__ import annotations

from functools import cache

from harness.corpus.loader import load_cases
from harness.validity.family import family_bands_met, family_markdown, run_family_condition
from harness.validity.truth import CaseTable, case_table


@cache
def tables() -> list[CaseTable]:
    return [case_table(c) for c in load_cases(["cases/quality"])]


def test_a_family_of_ties_never_names_a_best() -> None:
    cond = run_family_condition(tables(), 6, 20, "ties", 60, seed=5)
    assert cond.wrong_best == 0 and cond.covered == cond.replications and cond.worse_total == 0


def test_a_clear_best_is_covered_found_and_the_others_flagged() -> None:
    cond = run_family_condition(tables(), 5, 136, "one best by 15 pp", 60, seed=5)
    assert cond.covered / cond.replications >= 0.9
    assert cond.wrong_best == 0
    assert cond.worse_flagged / cond.worse_total > 0.5 and cond.best_found > 0


def test_the_report_marks_a_row_that_misses_its_band() -> None:
    good = run_family_condition(tables(), 3, 10, "one best", 20, seed=5).as_dict()
    bad = {**good, "coverage": {"k": 10, "n": 20, "rate": 0.5, "ci": [0.27, 0.73]}}
    assert family_bands_met([good]) and not family_bands_met([good, bad])
    assert "MISSED" in family_markdown([bad], "cmd") and "MISSED" not in family_markdown([good], "cmd")
