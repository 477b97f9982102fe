"""summary.json's rows are typed: decisions, comparisons, gates and the per-variant analyses read through models,
a malformed row is refused naming its key path, and a row's unknown keys are written back as they came."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harness.score.compare import comparison_row
from harness.score.registry import metrics
from harness.score.summary_model import (
    Calibration,
    ClassFigures,
    Comparison,
    ConformanceFailure,
    Consistency,
    DatasetGrounding,
    Decision,
    DecisionGate,
    GateResult,
    GroupFigures,
    PerturbationFigures,
    PolicyGate,
    Stability,
    Summary,
    ThresholdGate,
    read_summary_file,
    write_summary,
)
from tests.score.test_decide import run_decide, units


def summary() -> dict[str, Any]:
    """A run's summary with one of every typed row, made by the code that makes them."""
    decision = run_decide(units("cand", [True, False, True, True]), units("ctl", [True, True, True, False]))
    row = decision.model_dump(mode="json")
    variant = {
        "name": "v",
        "stability": {"stable_right": 3, "flaky": 1, "stable_wrong": 0, "majority_verdict_accuracy": 0.75,
                      "flaky_cases": ["c01"]},
        "consistency": {"k": 2, "cases": 4, "pass_k": 0.5, "pass_k_ci": [0.1, 0.9], "verdict_flip_rate": 0.25,
                        "verdict_flip_rate_ci": [0.0, 0.7]},
        "calibration": {"scored": 4, "auroc": None, "ece": 0.1,
                        "bins": [{"low": 0.0, "high": 0.5, "n": 2, "mean_score": 0.2, "pass_right": 0.5}]},
        "robustness": {"claim-order": {"cases": 4, "units": 4, "verdict_flip_rate": 0.0,
                                       "verdict_flip_rate_ci": [0.0, 0.5]}},
    }  # fmt: skip
    gate = {"gate": "ship_decision", "variant": "cand", "value": "ship", "threshold": "ctl", "passed": True,
            "detail": "ship against ctl"}  # fmt: skip
    return {
        "run": {"run_id": "r"},
        "conformance": {"policy_cases": 1, "policy_passed": 1, "passed": True},
        "variants": [variant],
        "comparisons": [{"a": "ctl", "b": "cand", **comparison_row(decision), "p_adjusted": 0.5}],
        "decisions": [row],
        "gates": [{"gate": "policy_conformance", "variant": None, "value": 1, "threshold": 1, "passed": True,
                   "detail": "1/1 policy cases"}, gate],
    }  # fmt: skip


def test_every_row_reads_as_its_model_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    data = summary()
    written = write_summary(tmp_path, data)
    assert written.to_json() == json.loads(
        json.dumps(data)
    )  # the same keys, order and values as the rows were made with
    model = read_summary_file(tmp_path)
    assert isinstance(model.decisions[0], Decision) and model.decisions[0].metrics["verdict_accuracy"].units == 4
    assert isinstance(model.comparisons[0], Comparison) and model.comparisons[0].p_adjusted == 0.5
    assert [type(g) for g in model.gates] == [PolicyGate, DecisionGate] and model.gates[0].value == 1
    v = model.variants[0]
    assert isinstance(v.stability, Stability) and isinstance(v.consistency, Consistency)
    assert isinstance(v.calibration, Calibration) and v.calibration.bins[0].n == 2
    assert isinstance(v.robustness, dict) and isinstance(v.robustness["claim-order"], PerturbationFigures)
    again = tmp_path / "again"
    again.mkdir()
    write_summary(again, model.to_json())
    assert (again / "summary.json").read_bytes() == (tmp_path / "summary.json").read_bytes()


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("decisions", 0, "decision"), "maybe", "decisions.0.decision"),
        (
            ("decisions", 0, "metrics", "verdict_accuracy", "units"),
            "many",
            "decisions.0.metrics.verdict_accuracy.units",
        ),
        (("decisions", 0, "regressions"), [{"epoch": 1}], "decisions.0.regressions.0.case_id"),
        (("comparisons", 0, "cases"), "all", "comparisons.0.cases"),
        (("gates", 1, "passed"), "perhaps", "gates.1.ship_decision.passed"),
        (("variants", 0, "stability", "flaky"), "some", "variants.0.stability.flaky"),
        (("variants", 0, "calibration", "bins"), [{"n": 1}], "variants.0.calibration.bins.0.low"),
        (("variants", 0, "robustness", "claim-order", "cases"), "x", "variants.0.robustness.claim-order.cases"),
    ],
)
def test_a_malformed_row_is_refused_naming_its_key_path(
    tmp_path: Path, path: tuple[Any, ...], value: Any, named: str
) -> None:
    data = summary()
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (tmp_path / "summary.json").write_text(json.dumps(data))
    with pytest.raises(ValidationError) as caught:
        read_summary_file(tmp_path)
    assert named in str(caught.value)
    with pytest.raises(ValidationError, match=named.replace(".", r"\.")):
        write_summary(tmp_path, data)  # nor is it written


def test_a_row_missing_its_identity_is_refused() -> None:
    data = summary()
    del data["decisions"][0]["candidate"]
    with pytest.raises(ValidationError, match=r"decisions\.0\.candidate"):
        write_summary(Path("/nonexistent"), data)


def test_keys_a_later_version_added_to_a_row_are_kept(tmp_path: Path) -> None:
    data = summary()
    later = copy.deepcopy(data)
    later["decisions"][0]["effect_size"] = 0.3
    later["decisions"][0]["metrics"]["verdict_accuracy"]["bayes_factor"] = 2.0
    later["gates"][0]["owner"] = "team"
    later["variants"][0]["stability"]["median_flips"] = 1
    (tmp_path / "summary.json").write_text(json.dumps(later))
    assert read_summary_file(tmp_path).to_json() == later


def test_a_row_written_before_a_key_existed_reads_without_it(tmp_path: Path) -> None:
    data = summary()
    for key in ("tests", "cases_needed", "unpaired_units"):
        del data["decisions"][0][key]
    for key in ("decision", "conclusion", "p_adjusted", "mde"):
        del data["comparisons"][0][key]
    (tmp_path / "summary.json").write_text(json.dumps(data))
    model = read_summary_file(tmp_path)
    assert model.comparisons[0].decision is None and model.decisions[0].tests == {}
    assert model.to_json() == data  # nothing added for the keys the file did not hold


COMMITTED = [
    Path(__file__).parents[1] / "run" / "data" / "v1-run",
    Path(__file__).parents[2] / "reports" / "baselines" / "reference",
]
"""Committed run folders whose summary.json an older version wrote (no `metrics`, no `perturbed_results`...)."""


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_a_committed_summary_reads_and_writes_back_unchanged(folder: Path, tmp_path: Path) -> None:
    """Every key and value as written (a variant's registered metrics are written in the registry's order)."""
    model = read_summary_file(folder)
    assert model.run is not None and model.results == model.run.results > 0
    assert set(model.figures()) == {v.name for v in model.variants}
    write_summary(tmp_path, model)
    original = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8")) == original
    assert "metrics" not in original and model.to_json() == original  # a key it lacked is not added


def test_a_comparison_from_before_holm_is_read_with_its_raw_p(tmp_path: Path) -> None:
    data = summary()
    old = {k: v for k, v in data["comparisons"][0].items() if k not in ("p_adjusted", "claim_accuracy_diff_p_adjusted")}
    data["comparisons"] = [old]
    (tmp_path / "summary.json").write_text(json.dumps(data))
    (comparison,) = read_summary_file(tmp_path).comparisons
    assert comparison.verdict_p == old["mcnemar_p"] and comparison.claim_p == old["claim_accuracy_diff_p"]
    assert Comparison.model_validate({**old, "p_adjusted": 0.9}).verdict_p == 0.9


def test_renamed_maps_every_variant_name_and_keeps_the_keys() -> None:
    model = Summary.model_validate(summary())
    model.conformance.failures.append(ConformanceFailure(case_id="c1", kind="quality", variant="cand"))
    rename = {"cand": "run1/cand", "ctl": "run1/ctl", "v": "run1/v"}
    renamed = model.renamed(rename)
    assert [v.name for v in renamed.variants] == ["run1/v"]
    assert (renamed.comparisons[0].a, renamed.comparisons[0].b) == ("run1/ctl", "run1/cand")
    assert (renamed.decisions[0].candidate, renamed.decisions[0].control) == ("run1/cand", "run1/ctl")
    assert [g.variant for g in renamed.gates] == [None, "run1/cand"]
    assert renamed.conformance.failures[0].variant == "run1/cand"
    assert model.variants[0].name == "v"  # a copy: the summary itself is unchanged
    assert set(renamed.to_json()["decisions"][0]) == set(model.to_json()["decisions"][0])


def test_figures_are_the_registered_metrics_of_each_variant() -> None:
    data = summary()
    data["variants"][0] |= {"verdict_accuracy": 0.75, "verdict_accuracy_ci": [0.5, 0.9]}
    model = Summary.model_validate(data)
    figures = model.figures()["v"]
    assert figures["verdict_accuracy"] == 0.75 and figures["claim_accuracy"] is None
    assert set(figures) == {m.key for m in metrics()}
    assert model.variants[0].figure_ci("verdict_accuracy") == [0.5, 0.9]


def test_each_gate_reads_as_its_kind_by_its_name(tmp_path: Path) -> None:
    data = summary()
    data["gates"] += [
        {"gate": "verdict_accuracy>=0.9", "variant": "cand", "value": None, "threshold": 0.9, "passed": False},
        {"gate": "reviewed_by_a_person", "value": "yes", "passed": True},  # a kind a later version may add
    ]
    (tmp_path / "summary.json").write_text(json.dumps(data))
    gates = read_summary_file(tmp_path).gates
    assert [type(g) for g in gates] == [PolicyGate, DecisionGate, ThresholdGate, GateResult]
    assert gates[1].value == "ship" and gates[1].threshold == "ctl" and gates[2].status == "failed"
    assert read_summary_file(tmp_path).to_json() == data  # no key added to any kind
    data["gates"][1]["value"] = "maybe"  # a decision gate holds a decision
    with pytest.raises(ValidationError, match=r"gates\.1\.ship_decision\.value"):
        Summary.model_validate(data)
    data["gates"][1]["value"], data["gates"][2]["threshold"] = "ship", "high"  # a threshold is a number
    with pytest.raises(ValidationError, match=r"gates\.2\.threshold\.threshold"):
        Summary.model_validate(data)


def test_the_breakdowns_read_as_their_models_and_keep_their_order(tmp_path: Path) -> None:
    data = summary()
    data["variants"][0] |= {
        "per_class": {"contradicted": {"precision": 0.5, "recall": 1.0, "f1": 0.6667, "support": 2}},
        "per_tag": {"redis": {"cases": 3, "verdict_accuracy": 2 / 3, "claims": 7}},
        "grounding_bacc_by_dataset": {"fever": {"grounding_bacc": None, "grounding_bacc_ci": None, "claims": 0}},
    }
    (tmp_path / "summary.json").write_text(json.dumps(data))
    v = read_summary_file(tmp_path).variants[0]
    assert isinstance(v.per_class["contradicted"], ClassFigures) and v.per_class["contradicted"].support == 2
    assert isinstance(v.per_tag["redis"], GroupFigures) and v.per_tag["redis"].figure("verdict_accuracy") == 2 / 3
    assert isinstance(v.grounding_bacc_by_dataset["fever"], DatasetGrounding)
    assert list(v.row()["per_tag"]["redis"]) == ["cases", "verdict_accuracy", "claims"]  # as written
    data["variants"][0]["per_tag"]["redis"]["cases"] = "three"
    with pytest.raises(ValidationError, match=r"variants\.0\.per_tag\.redis\.cases"):
        Summary.model_validate(data)
