"""The ship decision on hand-built unit outcomes: figures computed by hand, the three outcomes, MDE, pairing."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy.stats import norm

from harness.run.log import VariantInfo
from harness.score.decide import decide, paired_verdict_accuracy
from harness.score.pairing import PairingError, resolve_pairs
from harness.score.registry import Direction
from harness.score.stats import mde_paired_binary

GOLD = {"C1": ["direct_observation"], "C2": ["contradicted"]}


def units(variant: str, right: list[bool], unsafe: list[bool] | None = None, epochs: int = 1) -> pd.DataFrame:
    """Unit outcomes: case i right or wrong (same answer every epoch); wrong means C2 called direct_observation."""
    rows = []
    for i, ok in enumerate(right):
        for epoch in range(1, epochs + 1):
            bad_pass = bool(unsafe[i]) if unsafe else False
            rows.append(
                {
                    "variant": variant, "case_id": f"c{i:02d}", "case_hash": "h", "epoch": epoch,
                    "verdict": "REJECT" if ok else "PASS", "verdict_correct": ok, "model_verdict_correct": ok,
                    "unsafe_eligible": True, "unsafe_pass": bad_pass,
                    "claims_right": 2.0 if ok else 1.0, "claims_total": 2.0,
                    "claims": {"C1": "direct_observation", "C2": "contradicted" if ok else "direct_observation"},
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def run_decide(cand: pd.DataFrame, ctl: pd.DataFrame, **kw: object):
    gold = {cid: GOLD for cid in set(cand["case_id"]) | set(ctl["case_id"])}
    return decide(cand, ctl, gold, candidate="cand", control="ctl", control_run="run", changed={}, **kw)  # type: ignore[arg-type]


def test_a_significant_drop_blocks_with_hand_computed_figures() -> None:
    d = run_decide(units("cand", [False] * 8 + [True] * 2, unsafe=[True] * 8 + [False] * 2), units("ctl", [True] * 10))
    v = d.metrics["verdict_accuracy"]
    assert (v.control, v.candidate, v.diff) == (1.0, 0.2, pytest.approx(-0.8))
    assert v.p == pytest.approx(2 * 0.5**8) and v.test == "mcnemar_exact"  # 8 discordant, all the control's
    assert v.significantly_worse and not v.non_inferior
    u = d.metrics["unsafe_pass_rate"]
    assert (u.control, u.candidate, u.diff, u.p) == (0.0, 0.8, pytest.approx(0.8), pytest.approx(2 * 0.5**8))
    assert d.metrics["claim_accuracy"].diff == pytest.approx((12 - 20) / 20)
    assert d.decision == "block" and d.regressed_cases == [f"c{i:02d}" for i in range(8)]
    change = [c.model_dump() for c in d.regressions[0].claim_changes]
    assert change == [
        {"claim_id": "C2", "control": "contradicted", "candidate": "direct_observation", "gold": ["contradicted"]}
    ]
    assert any("significantly worse" in r for r in d.reasons)


Z2 = norm.ppf(0.975) ** 2


def test_identical_answers_ship_on_the_full_corpus_and_cannot_tell_on_twenty_cases() -> None:
    """No discordant pair of n: Tango's bound is z²/(n + z²), 2.7 pp at 136 cases, 16.1 pp at 20; a 5-point
    margin needs n >= z² · 0.95 / 0.05 = 72.99, so 73 cases."""
    same = run_decide(units("cand", [True, False] * 68), units("ctl", [True, False] * 68))
    v = same.metrics["verdict_accuracy"]
    assert same.decision == "ship" and v.diff_ci == pytest.approx([-Z2 / (136 + Z2), Z2 / (136 + Z2)])
    assert v.p == 1.0 and same.regressed_cases == [] and same.cases_needed is None
    small = run_decide(units("cand", [True, False] * 10), units("ctl", [True, False] * 10))
    assert small.decision == "inconclusive" and small.cases_needed == 73
    assert small.metrics["verdict_accuracy"].diff_ci == pytest.approx([-Z2 / (20 + Z2), Z2 / (20 + Z2)])
    assert (
        "verdict_accuracy: +0.0 pp, 95% CI [-16.1, +16.1] pp: 20 paired cases cannot rule out a loss of 16.1 pp; "
        "about 73 are needed for a 5.0 pp margin" in small.reasons
    )
    assert (small.margin, small.alpha) == (0.05, 0.05) and set(small.tests) >= {"tango_score", "mcnemar_exact"}
    better = run_decide(units("cand", [True] * 10), units("ctl", [False] * 8 + [True] * 2))
    # never a block; 8 of 10 won clears the verdict margin, but ten cases cannot rule out an unsafe-PASS rise
    assert better.decision == "inconclusive" and better.metrics["verdict_accuracy"].diff == pytest.approx(0.8)
    assert better.metrics["verdict_accuracy"].outcome == "ship" and better.metrics["unsafe_pass_rate"].cases_needed
    assert run_decide(units("cand", [True] * 10), units("ctl", [False] * 8 + [True] * 2),
                      gated=("verdict_accuracy",)).decision == "ship"  # fmt: skip


def test_noise_is_inconclusive_not_ship_and_require_margin_decides() -> None:
    d = run_decide(units("cand", [False, True] * 10), units("ctl", [True, False] * 10))
    v = d.metrics["verdict_accuracy"]
    assert v.diff == 0.0 and v.p == 1.0 and not v.significantly_worse
    assert v.diff_ci[0] < -0.05 and d.decision == "inconclusive"  # the corpus cannot rule out a 5-point loss
    assert (
        run_decide(units("cand", [False, True] * 10), units("ctl", [True, False] * 10), margin=0.5).decision == "ship"
    )


def test_gated_metrics_are_chosen() -> None:
    # worse only on unsafe PASS: blocked under the default gates, not when only verdict accuracy is gated
    cand = units("cand", [True] * 136, unsafe=[True] * 8 + [False] * 128)
    ctl = units("ctl", [True] * 136)
    assert run_decide(cand, ctl).decision == "block"
    assert run_decide(cand, ctl, gated=("verdict_accuracy",)).decision == "ship"


def test_changed_cases_do_not_pair_and_partial_overlap_is_reported() -> None:
    ctl = units("ctl", [True] * 10)
    cand = units("cand", [True] * 10)
    cand.loc[cand["case_id"].isin(["c00", "c01"]), "case_hash"] = "edited"
    d = run_decide(cand, ctl)
    assert (d.paired_cases, d.unpaired_cases) == (8, 2)
    assert any("8 cases paired, 2 unpaired" in r for r in d.reasons)
    none = run_decide(cand.assign(case_hash="x"), ctl)
    assert none.paired_cases == 0 and none.decision == "inconclusive"


def test_several_epochs_pair_by_epoch_and_use_the_clustered_test() -> None:
    d = run_decide(units("cand", [False] * 8 + [True] * 2, epochs=3), units("ctl", [True] * 10, epochs=3))
    v = d.metrics["verdict_accuracy"]
    assert d.paired_units == 30 and v.units == 30 and v.test == "cluster_sign_flip_exact"
    # eight cases each -3: only the two all-same-sign patterns of 2^8 reach |sum| = 24
    assert v.diff == pytest.approx(-0.8) and v.p == pytest.approx(2 / 2**8) and d.decision == "block"
    # three copies of each case: the interval of the ten cases alone (design effect 3)
    once = run_decide(units("cand", [False] * 8 + [True] * 2), units("ctl", [True] * 10)).metrics["verdict_accuracy"]
    assert v.design_effect == pytest.approx(3.0) and v.diff_ci == pytest.approx(once.diff_ci)


def connor_n(delta: float, psi: float) -> float:
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    psi = max(psi, delta)
    return (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - delta**2)) ** 2 / delta**2


def test_mde_solves_connors_formula() -> None:
    for n, discordant in ((136, 0), (136, 20), (400, 40), (50, 10)):
        mde = mde_paired_binary(n, discordant)
        assert mde is not None and connor_n(mde, discordant / n) == pytest.approx(n, rel=1e-6)
    # hand check: no discordance, n = 136: (1.96 + 0.84)² / 136 ≈ 0.058 to first order
    assert 0.05 < mde_paired_binary(136, 0) < 0.07
    assert mde_paired_binary(136, 40) > mde_paired_binary(136, 0)  # more disagreement, less resolution
    assert mde_paired_binary(0, 0) is None and mde_paired_binary(3, 0) is None


def v(name: str, prompt: str | None = None) -> VariantInfo:
    model = name.split("@")[0]
    return VariantInfo(name=name, model=model, prompt=prompt)


def test_pairing_rules() -> None:
    run = [v("openai:m@baseline", "baseline"), v("openai:m@cand", "cand"), v("openai:n@baseline", "baseline")]
    assert resolve_pairs(run, None, None) == []
    pairs = resolve_pairs(run, "@baseline", None)
    assert [(p.candidate, p.control) for p in pairs] == [("openai:m@cand", "openai:m@baseline")]
    named = resolve_pairs(run, "openai:m@baseline", None)
    assert [p.candidate for p in named] == ["openai:m@cand", "openai:n@baseline"]
    with pytest.raises(PairingError, match="openai:m@baseline, openai:m@cand"):
        resolve_pairs(run, "openai:x@baseline", None)
    # a baseline: same name first, else the one variant of the same model
    base = [v("openai:m@baseline", "baseline")]
    got = resolve_pairs([v("openai:m@cand", "cand")], None, base)
    assert [(p.candidate, p.control, p.control_side) for p in got] == [
        ("openai:m@cand", "openai:m@baseline", "baseline")
    ]
    with pytest.raises(PairingError, match="baseline variants of model openai:other: none"):
        resolve_pairs([v("openai:other@cand", "cand")], None, base)
    two = [v("openai:m@a", "a"), v("openai:m@b", "b")]
    with pytest.raises(PairingError, match="name one with --control"):
        resolve_pairs([v("openai:m@cand", "cand")], None, two)
    assert resolve_pairs([v("openai:m@cand", "cand")], "openai:m@b", two)[0].control == "openai:m@b"
    with pytest.raises(PairingError, match="no candidate"):
        resolve_pairs([v("reference")], "reference", None)


def test_a_baseline_kept_before_epochs_and_unsafe_flags_never_ships_on_what_it_did_not_measure() -> None:
    from harness.score.decide import headline

    legacy = units("ctl", [True] * 10).drop(columns=["epoch", "unsafe_eligible", "unsafe_pass", "claims", "verdict"])
    d = run_decide(units("cand", [True] * 10, unsafe=[True] * 8 + [False] * 2), legacy)
    u = d.metrics["unsafe_pass_rate"]
    assert u.units == 0 and u.diff is None and not u.significantly_worse  # unknown, never read as all unsafe
    assert d.decision == "inconclusive" and d.paired_units == 10  # a gated metric nobody measured cannot ship
    assert headline(d).startswith("unsafe_pass_rate: not measured")
    assert any("predate unsafe-PASS outcomes" in r for r in d.reasons)
    # gated on verdict accuracy alone, the same comparison can ship
    legacy_full = units("ctl", [True] * 136).drop(columns=["epoch", "unsafe_eligible", "unsafe_pass", "claims"])
    assert run_decide(units("cand", [True] * 136), legacy_full, gated=("verdict_accuracy",)).decision == "ship"
    worse = run_decide(units("cand", [False] * 8 + [True] * 2), legacy)
    assert worse.decision == "block" and worse.regressions[0].claim_changes == []  # the control kept no labels


def test_a_missing_value_in_the_control_is_unknown_not_true() -> None:
    ctl = units("ctl", [True] * 10)
    ctl["unsafe_pass"] = ctl["unsafe_pass"].astype(object)
    ctl.loc[ctl["case_id"].isin(["c00", "c01", "c02"]), "unsafe_pass"] = None  # damaged rows
    d = run_decide(units("cand", [True] * 10), ctl)
    u = d.metrics["unsafe_pass_rate"]
    assert u.units == 7 and u.control == 0.0 and u.diff == 0.0  # the three unknown rows are left out, not "unsafe"


def test_answers_the_control_never_gave_keep_a_candidate_from_shipping() -> None:
    # three epochs against a one-epoch control: epochs 2 and 3 cannot be judged, and they are all wrong
    cand = pd.concat([units("cand", [True] * 10), units("cand", [False] * 10, epochs=3).query("epoch > 1")])
    d = run_decide(cand, units("ctl", [True] * 10))
    assert (d.paired_units, d.unpaired_units) == (10, 20)
    assert d.decision == "inconclusive" and any("20 of the candidate's 30" in r for r in d.reasons)
    # two cases paired, the rest edited since: the identical two cannot vouch for the others
    edited = units("cand", [True] * 10)
    edited.loc[edited.index >= 2, "case_hash"] = "edited"
    assert run_decide(edited, units("ctl", [True] * 10)).decision == "inconclusive"


def test_a_unit_logged_twice_counts_once() -> None:
    cand = units("cand", [True] * 136)
    d = run_decide(pd.concat([cand, cand.iloc[:3]]), pd.concat([units("ctl", [True] * 136)] * 2))
    assert d.paired_units == 136 and d.unpaired_units == 0 and d.decision == "ship"


def test_the_mde_counts_cases_not_epochs() -> None:
    one = run_decide(units("cand", [True, False] * 10), units("ctl", [True, False] * 10))
    three = run_decide(units("cand", [True, False] * 10, epochs=3), units("ctl", [True, False] * 10, epochs=3))
    assert three.mde == one.mde  # three identical epochs carry no more information than one


def test_the_decision_metrics_are_the_registrys_and_a_new_one_is_one_registration() -> None:
    from harness.score.registry import MetricSpec, decidable, metric, registered

    assert decidable() == ("verdict_accuracy", "claim_accuracy", "unsafe_pass_rate")
    cand, ctl = units("cand", [False] * 8 + [True] * 2), units("ctl", [True] * 10)
    base = metric("verdict_accuracy")
    # a lower-is-better twin of verdict accuracy: the same drop now reads as an improvement, so it cannot block
    twin = MetricSpec(
        "verdict_errors_twin", "twin", "test", Direction.LOWER, base.format, base.compute,
        paired=paired_verdict_accuracy,
    )  # fmt: skip
    with registered(twin):
        assert "verdict_errors_twin" in decidable()
        d = run_decide(cand, ctl, gated=("verdict_errors_twin",))
        t = d.metrics["verdict_errors_twin"]
        assert t.gated and t.diff == pytest.approx(-0.8) and not t.significantly_worse
        assert not d.metrics["verdict_accuracy"].gated and d.decision != "block"
    assert "verdict_errors_twin" not in decidable() and "verdict_errors_twin" not in run_decide(cand, ctl).metrics


def test_claim_discordance_reads_each_units_stored_claims_wrong() -> None:
    """Which claims each side alone got right comes from the outcomes' `claims_wrong`, not from judging the labels
    again: here the labels agree, yet each side's outcome holds a different claim wrong (as a gold changed
    between the runs, a label rule changed, or a claim was judged under another label set would leave them)."""
    cand, ctl = units("cand", [True] * 6), units("ctl", [True] * 6)
    cand = cand.assign(claims_right=1.0, claims_wrong=[["C1"]] * 6)
    ctl = ctl.assign(claims_right=1.0, claims_wrong=[["C2"]] * 6)
    claims = run_decide(cand, ctl).metrics["claim_accuracy"]
    assert claims.diff == 0.0 and claims.discordant == 12  # each unit: C2 right on the candidate only, C1 the reverse
    # outcomes kept before `claims_wrong`: the labels and the gold decide (identical labels, nothing discordant)
    legacy = run_decide(cand.drop(columns="claims_wrong"), ctl.drop(columns="claims_wrong")).metrics["claim_accuracy"]
    assert legacy.discordant == 0
