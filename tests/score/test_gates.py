"""Gates: thresholds, the error-rate gate, and the baseline comparison's direction."""

from __future__ import annotations

import pandas as pd

from harness.score.gates import baseline_gates, threshold_gates


def outcomes(variant: str, right: list[bool]) -> pd.DataFrame:
    return pd.DataFrame(
        {"variant": variant, "case_id": [f"c{i}" for i in range(len(right))], "case_hash": "h", "verdict_correct": right,
         "model_verdict_correct": right, "claims_right": [2.0 if r else 0.0 for r in right], "claims_total": 2.0}
    )  # fmt: skip


def failed(gates: list[dict]) -> set[str]:
    return {g["gate"] for g in gates if not g["passed"]}


def test_a_significant_drop_fails_and_an_improvement_passes() -> None:
    good = outcomes("v", [True] * 10)
    bad = outcomes("v", [False] * 8 + [True] * 2)
    assert failed(baseline_gates(bad, good)) == {"baseline_verdict_accuracy", "baseline_claim_accuracy"}
    assert failed(baseline_gates(good, bad)) == set()  # better than the baseline is never a failure
    assert failed(baseline_gates(good, good)) == set()


def test_noise_passes() -> None:
    base = outcomes("v", [True, False] * 10)
    cur = outcomes("v", [False, True] * 10)
    assert failed(baseline_gates(cur, base)) == set()


def test_a_changed_case_is_not_paired() -> None:
    good = outcomes("v", [True] * 10)
    bad = outcomes("v", [False] * 10).assign(case_hash="changed")
    gates = baseline_gates(bad, good)
    assert failed(gates) == set() and "0 paired cases" in gates[0]["detail"]


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
