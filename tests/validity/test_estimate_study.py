"""The estimate's validity study at a small number of seeds: the population has the rates it claims, and the
PPI++ interval covers and is narrower than human-only where the judge is good."""

from __future__ import annotations

import numpy as np

from harness.validity import estimate as study


def test_population_rates_and_judge_kappa() -> None:
    pop = study.population(0.79, size=3000, seed=1)
    assert abs(pop.kappa - 0.79) < 0.01
    assert 0.05 < pop.truth[1] < 0.09  # unsafe PASS near 7%


def test_ppi_covers_and_beats_human_only_with_a_good_judge() -> None:
    pop = study.population(0.93, size=3000, seed=2)
    out = study.uniform_study(pop, (100,), seeds=300, seed=3)
    for rate in study.RATES:
        ppi, human = study.summary(out["ppi"], pop, rate, 100), study.summary(out["human"], pop, rate, 100)
        assert ppi["coverage"] >= 0.9, rate
        assert ppi["half_width"] < human["half_width"], rate


def test_active_draws_record_their_probabilities() -> None:
    pop = study.population(0.6, size=600, seed=4)
    draws, q = study.active_draws(pop, seeds=5, n=40, seed=5)
    assert all(len(set(row)) == 40 for row in draws.tolist())  # without replacement
    assert (q > 0).all() and (q <= 1).all()
    assert not np.allclose(q, q[:, :1])  # unequal: the design is not uniform
