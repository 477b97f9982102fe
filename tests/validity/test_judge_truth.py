"""The simulated judge and the exact truth it is measured against."""

from __future__ import annotations

import numpy as np

from harness.corpus.loader import load_cases
from harness.system.models import Derivability
from harness.system.policy import NOT_DIRECT
from harness.validity.judge import draw_mask, judged_case, model_name, parse_model_name, wrong_label
from harness.validity.simulate import clopper_pearson, simulate_run
from harness.validity.truth import case_table, expected_metrics

CASES = load_cases(["cases/quality/sql", "cases/quality/cache"])


def test_the_wrong_label_is_the_most_pass_favouring_one_the_gold_refuses() -> None:
    for gold in NOT_DIRECT | {Derivability.CONTRADICTED}:
        assert wrong_label({gold}) is Derivability.DIRECT_OBSERVATION
    assert wrong_label({Derivability.DIRECT_OBSERVATION}) is Derivability.REASONABLE_INFERENCE
    both = {Derivability.DIRECT_OBSERVATION, Derivability.REASONABLE_INFERENCE}
    assert wrong_label(both) is Derivability.OVERSTATED


def test_draws_are_fixed_by_seed_and_vary_across_seeds() -> None:
    judged = judged_case(next(c for c in CASES if len(c.expected.claims or {}) >= 3))
    assert draw_mask(judged, 0.5, 7) == draw_mask(judged, 0.5, 7)
    assert len({draw_mask(judged, 0.5, s) for s in range(40)}) > 2
    assert all(draw_mask(judged, 1.0, s) == (True,) * len(judged.answers) for s in range(5))
    assert parse_model_name(model_name(0.78, 12)) == (0.78, 12)
    assert parse_model_name("gpt-4o") is None


def test_a_perfect_judge_gets_every_case_right_through_the_pipeline() -> None:
    truth = expected_metrics([case_table(c) for c in CASES], 1.0)
    assert truth == {"verdict_accuracy": 1.0, "claim_accuracy": 1.0, "unsafe_pass_rate": 0.0}


def test_exact_truth_matches_the_mean_of_many_simulated_runs() -> None:
    tables = [case_table(c) for c in CASES]
    truth = expected_metrics(tables, 0.7)
    runs = [simulate_run(tables, 0.7, seed) for seed in range(400)]
    verdict = np.mean([r.verdict_correct.mean() for r in runs])
    eligible = np.array([t.unsafe_eligible for t in tables])
    unsafe = np.mean([r.unsafe_pass[eligible].mean() for r in runs])
    exact_verdict, exact_unsafe = truth["verdict_accuracy"], truth["unsafe_pass_rate"]
    better = expected_metrics(tables, 0.8)["verdict_accuracy"]
    assert exact_verdict is not None and exact_unsafe is not None and better is not None
    assert abs(verdict - exact_verdict) < 0.02
    assert abs(unsafe - exact_unsafe) < 0.03
    assert exact_verdict < better


def test_clopper_pearson_is_exact_at_the_edges() -> None:
    low, high = clopper_pearson(0, 200)
    assert low == 0.0 and abs(high - (1 - 0.025 ** (1 / 200))) < 1e-9
    assert clopper_pearson(200, 200)[1] == 1.0
