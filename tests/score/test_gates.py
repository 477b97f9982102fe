"""Gates: thresholds, the error-rate gate, and the baseline comparison's direction."""

from __future__ import annotations

from harness.score.gates import threshold_gates


def failed(gates: list[dict]) -> set[str]:
    return {g["gate"] for g in gates if not g["passed"]}


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
    assert failed(threshold_gates(summary(0, 10), {}, None)) == set()
    assert failed(threshold_gates(summary(10, 10), {}, None)) == {"error_rate<=0.0"}
    assert failed(threshold_gates(summary(1, 10), {}, None, max_error_rate=0.1)) == set()
    assert failed(threshold_gates(summary(0, 0), {}, None)) == set()  # no quality case: no error gate


def test_threshold_gates_fail_on_missing_figures() -> None:
    s = summary(0, 10)
    s["variants"][0]["claim_accuracy"] = None
    assert failed(threshold_gates(s, {"claim_accuracy": 0.5, "verdict_accuracy": 0.8}, 0.05)) == {"claim_accuracy>=0.5"}
