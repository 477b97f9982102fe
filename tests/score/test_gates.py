"""Gates: thresholds, the error-rate gate, and the baseline comparison's direction."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cli import main
from harness.run.gates import Gates
from harness.run.plan import missing_units
from harness.run.settings import ShardSettings, StopEarlySettings
from harness.score.gates import GateError, check_gate_names, completeness_gate, threshold_gates
from harness.score.summary_model import GateResult, Summary, Unfinished


def failed(gates: list[GateResult]) -> set[str]:
    return {g.gate for g in gates if not g.passed}


def typed(data: dict) -> Summary:
    return Summary.model_validate({"run": {"run_id": "r"}, **data})


def summary(errors: int, cases: int) -> dict:
    conformance = {
        "policy_passed": 1,
        "policy_cases": 1,
        "passed": True,
        "invariant_violations": 0,
        "quality_expectation_mismatches": 0,
    }
    return {
        "conformance": conformance,
        "variants": [
            {"name": "v", "errors": errors, "quality_cases": cases, "verdict_accuracy": 0.9, "unsafe_pass_rate": 0.0}
        ],
    }


def test_error_rate_gate() -> None:
    assert failed(threshold_gates(typed(summary(0, 10)), Gates())) == set()
    assert failed(threshold_gates(typed(summary(10, 10)), Gates())) == {"error_rate<=0.0"}
    assert failed(threshold_gates(typed(summary(1, 10)), Gates(max_error_rate=0.1))) == set()
    assert failed(threshold_gates(typed(summary(0, 0)), Gates())) == set()  # no quality case: no error gate


def unfinished_run(quality_cases: int, shard: str | None = None) -> SimpleNamespace:
    """What the gates read of an unfinished run's manifest: its quality cases, policy cases and shard."""
    return SimpleNamespace(
        quality_cases=quality_cases, policy_cases=1, filters=[], case_dirs=["cases"],
        settings=SimpleNamespace(shard=ShardSettings(shard=shard) if shard else None),
    )  # fmt: skip


def test_the_error_rate_counts_the_cases_an_unfinished_run_never_ran() -> None:
    s = typed(summary(0, 3) | {"run": {"run_id": "r", "unfinished": {"results": 4, "planned": 11}}})
    rows = threshold_gates(s, Gates(max_error_rate=0.5), unfinished_run(quality_cases=10))  # type: ignore[arg-type]
    (rate,) = [g for g in rows if g.gate.startswith("error_rate")]
    assert rate.value == pytest.approx(7 / 10) and not rate.passed  # 7 of 10 never ran: no reply either
    assert rate.detail.startswith("7 of 10 quality cases got no model reply (7 never run)")
    finished = typed(summary(0, 10))
    assert failed(threshold_gates(finished, Gates(), unfinished_run(quality_cases=10))) == set()  # type: ignore[arg-type]


def test_an_unfinished_run_fails_its_run_finished_gate() -> None:
    assert completeness_gate(None) == []
    (gate,) = completeness_gate(Unfinished(results=315, planned=1000))
    assert gate.gate == "run_finished" and gate.passed is False
    assert gate.detail.startswith("unfinished: 315 of 1,000 results") and "--resume" in gate.detail
    read = typed(summary(0, 1) | {"gates": [gate.to_json()]})  # as summary.json holds it
    assert type(read.gates[0]).__name__ == "CompletenessGate"  # read back as its kind


def test_missing_units_is_what_the_plan_has_and_the_folder_lacks() -> None:
    def manifest(planned: int | None = None, stop: StopEarlySettings | None = None) -> SimpleNamespace:
        return SimpleNamespace(settings=SimpleNamespace(planned_units=planned, stop_early=stop))

    assert missing_units(manifest(1000), 315) == 685  # type: ignore[arg-type]
    assert missing_units(manifest(1000), 1000) == 0  # type: ignore[arg-type]
    assert missing_units(manifest(), 3) == 0  # type: ignore[arg-type]  # a folder from before the plan was recorded
    stopped = manifest(1000, StopEarlySettings(look_size=20, look=3))
    assert missing_units(stopped, 60) == 0  # type: ignore[arg-type]  # the sequential rule ended it
    killed = manifest(1000, StopEarlySettings(look_size=20))
    assert missing_units(killed, 60) == 940  # type: ignore[arg-type]


def test_threshold_gates_fail_on_missing_figures() -> None:
    s = summary(0, 10)
    s["variants"][0]["claim_accuracy"] = None
    gates = Gates(fail_under={"claim_accuracy": 0.5, "verdict_accuracy": 0.8}, max_unsafe_pass=0.05)
    assert failed(threshold_gates(typed(s), gates)) == {"claim_accuracy>=0.5"}


def no_policy_case() -> dict:
    s = summary(0, 10)
    s["conformance"] |= {"policy_passed": 0, "policy_cases": 0}
    return s


def selection(policy_cases: int, filters: list[str] | None = None, shard: str | None = None) -> SimpleNamespace:
    """The manifest's case selection, which is all the policy gate reads of it."""
    settings = SimpleNamespace(shard=ShardSettings(shard=shard, index=2, count=3) if shard else None)
    return SimpleNamespace(
        policy_cases=policy_cases, filters=filters or [], case_dirs=["cases/quality"], settings=settings
    )


def policy(run: SimpleNamespace | None) -> GateResult:
    return threshold_gates(typed(no_policy_case()), Gates(), run)[0]  # type: ignore[arg-type]


def test_a_policy_gate_that_checked_nothing_fails_and_says_so() -> None:
    for run in (selection(3), selection(2, ["kind:policy"]), None):  # policy cases selected, none scored; unknown
        gate = policy(run)
        assert gate.gate == "policy_conformance" and gate.passed is False and gate.checked is False
        assert gate.detail.startswith("not checked: no policy case was scored")


def test_a_policy_gate_the_users_selection_left_out_says_so_and_holds() -> None:
    gate = policy(selection(0, ["kind:quality"]))
    assert gate.passed is True and gate.checked is False
    assert gate.detail.startswith("not checked: the filter kind:quality selects no policy case")
    assert policy(selection(0)).detail.startswith("not checked: cases/quality selects no policy case")
    shard = policy(selection(4, shard="2/3"))  # the policy cases fell to other shards: the merged run scores them
    assert shard.passed is True and shard.detail.startswith("not checked: shard 2/3")
    broken = no_policy_case()
    broken["conformance"] |= {"invariant_violations": 1, "passed": False}
    assert threshold_gates(typed(broken), Gates(), selection(0))[0].passed is False  # type: ignore[arg-type]


def test_a_policy_gate_with_cases_is_checked() -> None:
    gate = threshold_gates(typed(summary(0, 10)), Gates())[0]
    assert gate.passed is True and gate.status == "passed" and gate.detail.startswith("1/1 policy cases")
    assert "checked" not in gate.model_fields_set  # written as it always was: no "checked" key


def test_decide_on_names_only_decidable_metrics_with_the_key_path() -> None:
    check_gate_names({}, "study.yaml", ["verdict_accuracy", "claim_accuracy", "unsafe_pass_rate"])
    with pytest.raises(GateError, match=r"study.yaml: gates.decide_on\[1\]: 'macro_f1' is not a metric the decision"):
        check_gate_names({}, "study.yaml", ["verdict_accuracy", "macro_f1"])


def test_a_study_file_deciding_on_an_undecidable_metric_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = tmp_path / "study.yaml"
    study.write_text("gates:\n  decide_on: [cohen_kappa]\n")
    assert main(["run", "--study", str(study), "--out", str(tmp_path / "run")]) == 2
    assert "gates.decide_on[0]: 'cohen_kappa'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # refused before anything ran
    assert main(["run", "--decide-on", "cohen_kappa", "--out", str(tmp_path / "run")]) == 2  # argparse's choices
