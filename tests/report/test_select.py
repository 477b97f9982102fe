"""Which results the page embeds: failures first, a stable sample by case, never more than the budget."""

from __future__ import annotations

from harness.report.select import Selector, category
from harness.score.outcome import CLAIMS_WRONG, CONFORMANCE_FAILURE, ERROR, RIGHT, VERDICT_WRONG
from tests.report.builders import outcome, record


def test_category_orders_conformance_error_verdict_claims_right() -> None:
    right = outcome(record())
    assert category(right, conformance_failed=False) == RIGHT
    assert category(right, conformance_failed=True) == CONFORMANCE_FAILURE
    assert category(outcome(record(error="timeout")), False) == ERROR
    assert category(outcome(record(verdict="REJECT")), False) == VERDICT_WRONG
    claims_off = outcome(
        record(claims_got={"C1": "overstated"}, gold_claims={"C1": ["contradicted"], "C2": ["unsupported"]})
    )
    assert category(claims_off, False) == CLAIMS_WRONG
    assert claims_off.outcome.claims_wrong == ("C1", "C2")  # a gold claim left unclassified is wrong too
    # a policy record is right unless conformance says otherwise, whatever its verdict
    assert category(outcome(record(kind="policy", verdict="REJECT")), False) == RIGHT


def _offer_all(selector: Selector, n_cases: int, variants: list[str], wrong_every: int) -> None:
    for v in variants:
        for i in range(n_cases):
            row = outcome(record(case_id=f"c{i:03d}", variant=v, verdict="REJECT" if i % wrong_every == 0 else "PASS"))
            selector.offer(row.case_id, row.variant, row.epoch, category(row, False), row)


def test_failures_come_first_and_the_budget_holds() -> None:
    selector = Selector(limit=50)
    _offer_all(selector, 200, ["a", "b"], wrong_every=10)  # 40 failures, 360 right
    picked = selector.chosen()
    assert len(picked) == 50
    cats = [cat for cat, _ in picked]
    assert cats.count(VERDICT_WRONG) == 40  # every failure fits, so every failure is kept
    assert cats == sorted(cats)  # failures before the sample
    info = selector.describe()
    assert info == {**info, "results": 400, "embedded": 50, "failures": 40, "failures_embedded": 40, "complete": False}


def test_a_share_of_the_budget_shows_results_that_went_right() -> None:
    selector = Selector(limit=50)
    _offer_all(selector, 200, ["a"], wrong_every=1)  # every result wrong: nothing right to show
    assert all(cat == VERDICT_WRONG for cat, _ in selector.chosen())
    selector = Selector(limit=50)
    _offer_all(selector, 300, ["a"], wrong_every=2)  # 150 failures, 150 right
    cats = [cat for cat, _ in selector.chosen()]
    assert cats.count(RIGHT) == 5 and cats.count(VERDICT_WRONG) == 45


def test_the_sample_picks_the_same_cases_for_every_variant_and_is_stable() -> None:
    one, two = Selector(limit=30), Selector(limit=30)
    _offer_all(one, 100, ["a", "b", "c"], wrong_every=1000)  # case 0 wrong in each variant, the rest right
    _offer_all(two, 100, ["a", "b", "c"], wrong_every=1000)
    picked = [(r.case_id, r.variant) for _, r in one.chosen()]
    assert picked == [(r.case_id, r.variant) for _, r in two.chosen()]
    by_variant: dict[str, set[str]] = {}
    for case_id, variant in picked:
        by_variant.setdefault(variant, set()).add(case_id)
    assert by_variant["a"] == by_variant["b"] == by_variant["c"]
    assert {"c000"} <= by_variant["a"]


def test_everything_is_embedded_when_it_fits() -> None:
    selector = Selector(limit=100)
    _offer_all(selector, 20, ["a"], wrong_every=3)
    assert selector.describe()["complete"] is True
    assert len(selector.chosen()) == 20
