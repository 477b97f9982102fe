"""The anchor: a second non-inferiority test beside the control, combined as the gated metrics are, naming the
comparison that decided."""

from __future__ import annotations

import pytest

from harness.score.decide import Decision, decision_line, headline, with_anchor


def decision(kind: str, reason: str = "") -> Decision:
    return Decision(
        candidate="m@new", control="m@old", control_run="r", decision=kind, reasons=[reason or f"{kind} reason"]
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("control", "anchor", "final", "by"),
    [
        ("ship", "ship", "ship", "control"),
        ("ship", "inconclusive", "inconclusive", "anchor"),
        ("ship", "block", "block", "anchor"),
        ("inconclusive", "ship", "inconclusive", "control"),
        ("inconclusive", "block", "block", "anchor"),
        ("block", "ship", "block", "control"),
        ("block", "block", "block", "control"),
    ],
)
def test_both_tests_decide_together(control: str, anchor: str, final: str, by: str) -> None:
    d = with_anchor(decision(control), decision(anchor))
    assert (d.decision, d.decided_by, d.control_decision) == (final, by, control)
    assert d.anchor is not None and d.anchor.decision == anchor


def test_the_headline_names_the_anchor_when_it_decided() -> None:
    anchor = decision("block", "verdict_accuracy: significantly worse, -4.0 pp (p 0.01, alpha 0.05)")
    anchor = anchor.model_copy(update={"control_run": "recorded v1"})
    d = with_anchor(decision("ship"), anchor)
    assert (
        headline(d)
        == "against the anchor recorded v1: verdict_accuracy: significantly worse, -4.0 pp (p 0.01, alpha 0.05)"
    )
    assert decision_line(d).startswith("BLOCK m@new against m@old: against the anchor recorded v1")
    assert d.reasons[-1].startswith("against the anchor recorded v1")


def test_a_decision_without_anchor_is_unchanged() -> None:
    d = decision("ship")
    assert d.anchor is None and d.decided_by is None and headline(d) == headline(d.model_copy())
