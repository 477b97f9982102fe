"""What the history answers: diff through the decision engine, bisect, trend, and a record as a control folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history.ops import as_control_folder, bisect, diff, trend
from harness.history.record import HistoryError
from harness.history.store import open_store
from harness.score.decide import decide, what_changed
from harness.score.outcomes import load_outcomes
from harness.score.regression import load_control_run


def test_diff_is_the_decision_engine_on_the_recorded_units(chain_store: tuple[Path, list[Path]]) -> None:
    root, runs = chain_store
    store = open_store(root)
    heads = store.heads()
    a, c = store.load(heads[0].id), store.load(heads[2].id)
    d = diff(a, c)
    # the same call on the run folders' own outcomes gives the same figures
    units_a, units_c = load_outcomes(runs[0]), load_outcomes(runs[2])
    ma, mc = a.manifest_model(), c.manifest_model()
    direct = decide(
        units_c, units_a, {}, candidate="x", control="y", control_run="z",
        changed=what_changed(mc.variants[0], ma.variants[0], mc, ma),
    )  # fmt: skip
    assert d.metrics == direct.metrics and d.decision == direct.decision
    assert d.metrics["verdict_accuracy"].diff == pytest.approx(-2 / 21)
    assert d.regressed_cases == ["q1-1", "q7-1"]
    assert "prompt" in d.changed


def test_bisect_finds_the_first_run_where_a_case_changed(chain_store: tuple[Path, list[Path]]) -> None:
    store = open_store(chain_store[0])
    found = bisect(store, store.heads(), "q7-1")
    assert found.first_change == 2 and found.history[2].commit == "c3"
    assert [o.right for o in found.history] == [True, True, False, False]
    assert bisect(store, store.heads(), "q1-1").first_change == 1
    assert bisect(store, store.heads(), "q2-1").first_change is None
    with pytest.raises(HistoryError, match="in no recorded run"):
        bisect(store, store.heads(), "q99")


def test_trend_has_a_point_with_its_ci_per_run(chain_store: tuple[Path, list[Path]]) -> None:
    store = open_store(chain_store[0])
    points = trend(store.heads(), "verdict_accuracy")
    assert [p.commit for p in points] == ["c1", "c2", "c3", "c4"]
    assert [p.value for p in points] == pytest.approx([1.0, 20 / 21, 19 / 21, 20 / 21])
    assert all(p.ci and p.ci[0] <= p.value <= p.ci[1] for p in points)
    assert [p.bad for p in points] == [0, 1, 2, 1] and {p.units for p in points} == {21}


def test_a_record_is_a_control_folder_a_run_reads(chain_store: tuple[Path, list[Path]], tmp_path: Path) -> None:
    store = open_store(chain_store[0])
    record = store.load(store.heads()[1].id)
    control = load_control_run(as_control_folder(record, tmp_path / "ctl"))
    original = load_outcomes(chain_store[1][1])
    assert control.units[original.columns].equals(original)
    assert [v.name for v in control.variants] == [v.name for v in record.manifest_model().variants]
