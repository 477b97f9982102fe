"""The alert rule: its reference bound covers, its e-values are valid, and it fires on a rise and not without one.

The rates here are checked with small simulations at fixed seeds; the full study is
`python -m harness.history.alert_study` (reports/history/)."""

from __future__ import annotations

import numpy as np

from harness.history.alert import AlertSettings, detect, e_value, reference_upper


def test_the_reference_bound_covers_the_rate_of_unequal_units() -> None:
    rng = np.random.default_rng(1)
    p = rng.choice([0.0, 0.05, 0.3], size=400)  # units with different rates, mean about 0.117
    misses = sum(reference_upper(int((rng.random(400) < p).sum()), 400, 0.025) < p.mean() for _ in range(2000))
    assert misses / 2000 <= 0.025
    assert reference_upper(0, 1000, 0.025) < 0.01 and reference_upper(10, 0, 0.025) == 1.0


def test_the_e_value_has_expectation_at_most_one_at_the_bound() -> None:
    rng = np.random.default_rng(2)
    n, u = 300, 0.05
    draws = [e_value(int((rng.random(n) < u).sum()), n, u) for _ in range(20000)]
    assert np.mean(draws) <= 1.05  # exactly <= 1 in expectation; sampling error only
    assert e_value(60, 300, 0.05) > 1e3 and e_value(0, 300, 0.05) < 1


def test_detect_fires_on_a_rise_and_not_on_equivalent_runs() -> None:
    rng = np.random.default_rng(3)
    s = AlertSettings()
    same = [(int((rng.random(400) < 0.04).sum()), 400) for _ in range(s.reference_runs + s.horizon)]
    quiet = detect(same, s)
    assert quiet.first_alarm is None and quiet.reference_upper is not None
    assert quiet.threshold == s.horizon / (s.alpha / 2)
    risen = same[:20] + [(int((rng.random(400) < 0.09).sum()), 400) for _ in range(10)]
    loud = detect(risen, s)
    assert loud.first_alarm is not None and 20 <= loud.first_alarm <= 23
    assert all(not look.alarm for look in loud.looks[:20])


def test_too_few_runs_say_so() -> None:
    result = detect([(1, 100), (2, 100)], AlertSettings(reference_runs=5))
    assert result.first_alarm is None and "needs 5 reference runs" in result.note
