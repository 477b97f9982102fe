"""Robustness figures by hand: flips against the same variant's unperturbed answer on the same case and epoch."""

from __future__ import annotations

from typing import Any

import pytest

from harness.run.log import Gold, ResultRecord
from harness.score.headline import headline_records, is_headline
from harness.score.robustness import add_robustness, claim_flips, robustness
from harness.score.summary_model import VariantSummary

GOLD = Gold(
    parse_status="valid",
    gatekeeper={"status": "pass", "failed_rules": [], "warnings": []},
    claims={"C1": ["direct_observation"], "C2": ["contradicted"]},
    verdict=["REJECT"],
    model_verdict=None,
)


def record(case: str, verdict: str, claims: dict[str, str], epoch: int = 1, **extra: Any) -> ResultRecord:
    gold = extra.pop("gold", GOLD)
    return ResultRecord(
        case_id=case, case_hash=f"h-{case}-{extra.get('perturbation')}", kind="quality", variant=extra.pop("variant", "v"),
        epoch=epoch, dataset="d", tags=[], spec=[], parse_status="valid", gatekeeper=None, claims=claims,
        model_verdict=verdict, verdict=verdict, error=extra.pop("error", None), gold=gold, **extra,
    )  # fmt: skip


RIGHT = {"C1": "direct_observation", "C2": "contradicted"}


def test_flip_rates_and_accuracy_by_hand() -> None:
    records = [
        record("a", "REJECT", RIGHT),
        record("a", "PASS", {"C1": "direct_observation", "C2": "direct_observation"}, perturbation="claim-order"),
        record("b", "REJECT", RIGHT),
        record("b", "REJECT", RIGHT, perturbation="claim-order"),
        record("b", "REJECT", RIGHT, epoch=2),
        record("b", "REJECT", {"C1": "unsupported", "C2": "contradicted"}, epoch=2, perturbation="claim-order"),
        # another variant's unperturbed answer is never the reference
        record("a", "PASS", {}, variant="w"),
        # an unscored unit is left out
        record("c", "REJECT", RIGHT),
        record("c", "PASS", {}, perturbation="claim-order", error="transport"),
    ]
    figures = robustness(records)["v"]["claim-order"]
    assert figures.cases == 2 and figures.units == 3
    assert figures.verdict_flip_rate == pytest.approx(1 / 3)
    assert figures.claim_flip_rate == pytest.approx(2 / 6)
    lo, hi = figures.verdict_flip_rate_ci
    assert 0 <= lo <= 1 / 3 <= hi <= 1
    assert figures.verdict_accuracy == pytest.approx(2 / 3)
    assert figures.claim_accuracy == pytest.approx(4 / 6)
    assert "w" not in robustness(records)


def test_claim_ids_are_read_back_through_the_map() -> None:
    original = record("a", "REJECT", RIGHT)
    renamed = record(
        "a", "REJECT", {"K1": "direct_observation", "K2": "contradicted"}, perturbation="claim-ids",
        claim_id_map={"K1": "C1", "K2": "C2"},
        gold=GOLD.model_copy(update={"claims": {"K1": ["direct_observation"], "K2": ["contradicted"]}}),
    )  # fmt: skip
    assert claim_flips(original, renamed) == (0, 2)
    assert claim_flips(original, renamed.model_copy(update={"claim_id_map": None})) == (2, 2)
    figures = robustness([original, renamed])["v"]["claim-ids"]
    assert figures.claim_flip_rate == 0 and figures.claim_accuracy == 1.0


def test_every_asked_perturbation_gets_an_entry() -> None:
    variants = [VariantSummary(name="v"), VariantSummary(name="w")]
    records = [record("a", "REJECT", RIGHT), record("a", "PASS", RIGHT, perturbation="format")]
    add_robustness(variants, records, ["format", "distractor"])
    assert variants[0].robustness is not None and variants[0].robustness["format"].verdict_flip_rate == 1.0
    assert variants[1].robustness is not None
    empty = variants[1].robustness["distractor"]
    assert empty.cases == 0 and empty.verdict_flip_rate is None and empty.claim_flip_rate_ci is None
    assert "claim_flip_rate_ci" in variants[1].model_dump(exclude_unset=True)["robustness"]["distractor"]
    plain = [VariantSummary(name="v")]
    add_robustness(plain, records, [])
    assert "robustness" not in plain[0].model_dump(exclude_unset=True)


def test_headline_predicate() -> None:
    records = [record("a", "REJECT", RIGHT), record("a", "PASS", RIGHT, perturbation="format")]
    assert [is_headline(r) for r in records] == [True, False]
    assert headline_records(records) == records[:1]
