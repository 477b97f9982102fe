"""A family of variants: which pairs it decides, and Hsu's MCB ranking of all of them."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from harness.score.compare import compare_pairs
from harness.score.family import ALL_PAIRS_MAX, family_pairs, mcb_intervals, rank_variants, standing


def test_a_small_family_compares_every_pair_and_a_large_one_each_with_the_control() -> None:
    small = [f"v{i}" for i in range(ALL_PAIRS_MAX)]
    assert family_pairs(small) == list(itertools.combinations(small, 2))
    large = [f"v{i}" for i in range(ALL_PAIRS_MAX + 1)]
    assert family_pairs(large) == [("v0", v) for v in large[1:]]
    assert family_pairs(large, control="v3") == [("v3", v) for v in large if v != "v3"]
    assert family_pairs(large, all_pairs=True) == list(itertools.combinations(large, 2))
    assert family_pairs(large, control="not-a-variant")[0] == ("v0", "v1")


def units(variant: str, right: list[bool], epochs: int = 1) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"variant": variant, "case_id": f"c{i}", "case_hash": "h", "epoch": e, "verdict_correct": r,
             "model_verdict_correct": r, "claims_right": float(r), "claims_total": 1.0, "unsafe_eligible": True,
             "unsafe_pass": False}
            for i, r in enumerate(right)
            for e in range(1, epochs + 1)
        ]
    )  # fmt: skip


def test_compare_pairs_past_a_handful_decides_each_variant_against_the_control_once() -> None:
    rng = np.random.default_rng(3)
    names = [f"v{i}" for i in range(ALL_PAIRS_MAX + 3)]
    frame = pd.concat([units(n, list(rng.random(30) < 0.8)) for n in names], ignore_index=True)
    rows = compare_pairs(frame, names, control="v2")
    assert [(r.a, r.b) for r in rows] == [("v2", n) for n in names if n != "v2"]
    assert all(r.cases == 30 for r in rows)
    # Holm over the k - 1 comparisons of the family, not over all pairs
    assert all(r.p_adjusted is not None and r.mcnemar_p is not None and r.p_adjusted >= r.mcnemar_p for r in rows)
    assert len(compare_pairs(frame, names, all_pairs=True)) == len(names) * (len(names) - 1) // 2


def test_a_clear_best_is_named_and_the_rest_are_not_best() -> None:
    best = units("best", [True] * 40)
    others = [units(f"w{i}", [True] * 20 + [False] * 20) for i in range(4)]
    ranking = rank_variants(pd.concat([best, *others]), ["w0", "best", "w1", "w2", "w3"])
    by_name = {r.name: r for r in ranking.variants}
    assert by_name["best"].standing == "best" and by_name["best"].rank == 1 and by_name["best"].mcb_lower == 0
    assert {by_name[f"w{i}"].standing for i in range(4)} == {"not best"}
    assert all(by_name[f"w{i}"].mcb_upper == 0 for i in range(4))
    assert ranking.cases == 40 and "best is the best of 5" in ranking.note


def test_identical_variants_may_each_be_the_best() -> None:
    same = [True, False] * 15
    ranking = rank_variants(pd.concat([units(n, same) for n in "abc"]), list("abc"))
    assert [r.standing for r in ranking.variants] == ["may be best"] * 3
    assert "3 of 3 variants may be the best" in ranking.note


def test_only_cases_every_variant_answered_are_ranked_and_epochs_are_averaged_per_case() -> None:
    a, b = units("a", [True] * 10, epochs=3), units("b", [False] * 12, epochs=3)
    c = units("c", [True] * 10)
    ranking = rank_variants(pd.concat([a, b, c]), ["a", "b", "c"])
    assert ranking.cases == 10
    assert {r.name: r.rate for r in ranking.variants} == {"a": 1.0, "b": 0.0, "c": 1.0}


def test_standing_reads_the_interval_sides() -> None:
    assert standing(-0.1, 0.0) == "not best"
    assert standing(0.0, 0.1) == "best"
    assert standing(-0.1, 0.1) == standing(0.0, 0.0) == "may be best"


def test_mcb_intervals_hold_the_truth_simultaneously_in_a_simulation() -> None:
    """Normal per-case scores with a shared case effect, means known: every variant's interval holds its true
    distance to the best other at once in at least 1 - alpha of the draws (a sign or side error drops it)."""
    rng = np.random.default_rng(11)
    means = np.array([0.0, -0.3, -0.35, -0.35, -0.6])
    truth = means - np.array([np.delete(means, i).max() for i in range(len(means))])
    reps, held, named_best = 400, 0, 0
    for _ in range(reps):
        case = rng.normal(0, 1, 40)
        matrix = means[:, None] + case[None, :] + rng.normal(0, 0.3, (len(means), 40))
        lower, upper, q = mcb_intervals(matrix, 0.05)
        assert q is not None and np.all(lower <= 0) and np.all(upper >= 0)
        held += bool(np.all((lower <= truth) & (truth <= upper)))
        named_best += standing(lower[0], upper[0]) == "best"
    assert held / reps >= 0.93
    assert named_best / reps > 0.5  # and the intervals are not vacuous: the true best is usually found


def test_fewer_than_two_cases_rank_nothing() -> None:
    lower, upper, q = mcb_intervals(np.ones((3, 1)))
    assert q is None and lower.tolist() == upper.tolist() == [0.0, 0.0, 0.0]
    ranking = rank_variants(pd.concat([units(n, [True]) for n in "ab"]), ["a", "b"])
    assert ranking.critical_value is None and "nothing could be ranked" in ranking.note


@pytest.mark.parametrize("k", [3, 8])
def test_the_summary_carries_the_ranking_of_three_or_more_variants(k: int) -> None:
    from harness.score.summary_model import Summary

    ranking = rank_variants(pd.concat([units(f"v{i}", [True] * 5) for i in range(k)]), [f"v{i}" for i in range(k)])
    data = {"run": {"run_id": "r"}, "conformance": {}, "ranking": ranking.model_dump(mode="json")}
    read = Summary.model_validate(data)
    assert read.ranking is not None and len(read.ranking.variants) == k


def test_a_pair_already_decided_is_not_decided_again_and_reads_the_same() -> None:
    from harness.score.decide import decide

    rng = np.random.default_rng(5)
    names = [f"v{i}" for i in range(ALL_PAIRS_MAX + 2)]
    frame = pd.concat([units(n, list(rng.random(25) < 0.7), epochs=2) for n in names], ignore_index=True)
    made = {
        ("v0", n): decide(frame[frame["variant"] == n], frame[frame["variant"] == "v0"], {}, candidate=n,
                          control="v0", control_run="this run", changed={})
        for n in names[1:]
    }  # fmt: skip
    fresh = compare_pairs(frame, names)
    reused = compare_pairs(frame, names, decided=made)
    assert [c.model_dump() for c in reused] == [c.model_dump() for c in fresh]


def test_a_large_familys_decisions_keep_a_few_regressions_and_say_how_many() -> None:
    from harness.score.decide import decide
    from harness.score.family import REGRESSIONS_KEPT, large_family, trimmed
    from harness.score.summary_model import decision_written

    lost = decide(units("b", [False] * 12), units("a", [True] * 12), {}, candidate="b", control="a",
                  control_run="this run", changed={})  # fmt: skip
    cut = trimmed(lost)
    assert len(lost.regressions) == 12 and len(cut.regressions) == REGRESSIONS_KEPT and cut.regressions_total == 12
    assert cut.regressed_cases == lost.regressed_cases  # every regressed case id is still named
    assert "regressions_total" in decision_written(cut).to_json()
    assert "regressions_total" not in decision_written(lost).to_json()  # an untrimmed decision keeps its keys
    assert large_family([f"v{i}" for i in range(ALL_PAIRS_MAX + 1)]) and not large_family(["a", "b"])
    assert not large_family([f"v{i}" for i in range(ALL_PAIRS_MAX + 1)], all_pairs=True)


def test_a_summary_can_be_written_on_one_line_and_reads_the_same(tmp_path) -> None:
    from harness.score.summary_model import read_summary_file, write_summary

    data = {"run": {"run_id": "r"}, "conformance": {}}
    write_summary(tmp_path, data, indent=None)
    text = (tmp_path / "summary.json").read_text()
    assert text.count("\n") == 1 and read_summary_file(tmp_path).run.run_id == "r"


def test_variants_that_share_no_case_rank_without_a_rate() -> None:
    ranking = rank_variants(pd.concat([units("a", [True] * 3), units("b", [True] * 3), units("c", [])]), list("abc"))
    assert ranking.cases == 0 and all(r.rate is None for r in ranking.variants)
    assert "nothing could be ranked" in ranking.note
    assert "NaN" not in json.dumps(ranking.model_dump(mode="json"))
