"""The conformance checker itself: each invariant must catch an evaluation that breaks it."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest

from harness.corpus.loader import load_cases
from harness.run.conformance import CaseViews, invariant_violations, policy_case_mismatches
from harness.run.execute import run_case, scripted_verifier_for
from harness.system.models import Verdict
from tests.run.corpus_builder import write_corpus


@pytest.fixture
def policy_case_and_store(tmp_path: Path):
    case = next(c for c in load_cases([write_corpus(tmp_path / "c", ["q1"])]) if c.kind == "policy")
    case = case.model_copy(
        update={"session": case.session.model_copy(update={"self_evaluation": {"executor_self_check": {"ok": True}}})}
    )
    evaluation, persisted = asyncio.run(run_case(case, scripted_verifier_for(case)))
    return case, evaluation, persisted


def test_a_conforming_case_has_no_violation(policy_case_and_store) -> None:
    case, evaluation, persisted = policy_case_and_store
    assert policy_case_mismatches(case, evaluation) == []
    assert invariant_violations(case, persisted) == []


def broken(persisted: dict, edit) -> dict:
    out = copy.deepcopy(persisted)
    edit(out)
    return out


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p.pop("executor_self_check"), 'sibling key "executor_self_check" of self_evaluation was lost'),
        (
            lambda p: p["verifier_evaluation"].pop("gatekeeper_result"),
            'verifier_evaluation has no "gatekeeper_result" key',
        ),
        (
            lambda p: p["verifier_evaluation"]["facts_checked"][0].update(verification="direct_evidence"),
            "facts_checked for claim C",
        ),
        (
            lambda p: p["verifier_evaluation"].update(
                verdict="PASS", executor_output_parse_status={"status": "malformed", "reason": "x"}
            ),
            "a parse status other than valid ended in PASS",
        ),
        (
            lambda p: p["verifier_evaluation"]["claim_checks"][1]["evidence_refs"][0].update(tool_name=None),
            "claims.C2: evidence ref",
        ),
        (
            lambda p: p["verifier_evaluation"]["claim_checks"][1]["evidence_refs"][0].update(trace_ref=None),
            "claims.C2: evidence ref",
        ),
        (
            lambda p: p["verifier_evaluation"]["claim_checks"].append(
                {**p["verifier_evaluation"]["claim_checks"][0], "claim_id": "C9"}
            ),
            "claim check for C9, which the executor never claimed",
        ),
        (lambda p: p.pop("verifier_evaluation"), "no verifier_evaluation persisted"),
        # INTERPRETATION §8: null written, isolation, one check and one fact per claim, values by JSON meaning.
        (
            lambda p: p["verifier_evaluation"].pop("model_verdict"),
            'verifier_evaluation has no "model_verdict" key (write "model_verdict": null',
        ),
        (
            lambda p: p.update(reviewed_by={"user": "ana"}),
            'self_evaluation holds "reviewed_by", which this session did not have',
        ),
        (
            lambda p: p["verifier_evaluation"]["claim_checks"].append(
                dict(p["verifier_evaluation"]["claim_checks"][0])
            ),
            "claim_checks has 2 items for claim C1",
        ),
        (
            lambda p: p["verifier_evaluation"]["facts_checked"].pop(),
            "facts_checked has no item for claim C2",
        ),
        (
            lambda p: p["verifier_evaluation"]["claim_checks"][0].update(verification=["LOW_CONFID"]),
            'verifier_evaluation does not follow INTERPRETATION §7: claim_checks[0].verification is ["LOW_CONFID"]',
        ),
        (
            lambda p: p.update(executor_self_check={"ok": 1}),
            'sibling key "executor_self_check" of self_evaluation was changed: sent {"ok": true}, answered {"ok": 1}',
        ),
        # What a broken SUT (issue 15 review) got through: each must now be caught on its own.
        (
            lambda p: p.update(executor_self_check=None),
            'sibling key "executor_self_check" of self_evaluation was changed',
        ),
        (
            lambda p: p["verifier_evaluation"].update(tool_trace_summary=[]),
            "tool_trace_summary",
        ),
        (
            lambda p: p["verifier_evaluation"]["tool_trace_summary"][0].update(result_excerpt="nothing here"),
            "tool_trace_summary",
        ),
        (
            lambda p: p["verifier_evaluation"]["claim_checks"][0].update(evidence_refs=[]),
            "claims.C1: evidence_refs empty though the claim has evidence bindings",
        ),
        (  # with its own trace emptied, a SUT's partial refs are still judged against the session's trace
            lambda p: (
                p["verifier_evaluation"].update(tool_trace_summary=[]),
                p["verifier_evaluation"]["claim_checks"][1]["evidence_refs"][0].update(tool_name=None),
            ),
            "claims.C2: evidence ref",
        ),
        (lambda p: p["verifier_evaluation"]["facts_checked"][0].update(fact=""), 'facts_checked.C1: fact is ""'),
        (lambda p: p["verifier_evaluation"].update(groundedness_score=7.5), "groundedness_score 7.5 is outside [0, 1]"),
        (
            lambda p: p["verifier_evaluation"].update(adjustments=[]),
            "verdict PASS became REJECT with no adjustment recorded",
        ),
        (lambda p: p["verifier_evaluation"]["gatekeeper_result"].update(errors=[]), "gatekeeper errors name []"),
        (
            lambda p: p["verifier_evaluation"]["gatekeeper_result"].update(status="warn"),
            "gatekeeper status is warn; its failed_rules and warnings make it fail",
        ),
    ],
)
def test_each_invariant_catches_its_violation(policy_case_and_store, edit, message: str) -> None:
    case, _, persisted = policy_case_and_store
    problems = invariant_violations(case, broken(persisted, edit))
    assert any(p.startswith(message) for p in problems), problems


def test_the_trace_is_judged_at_the_runs_excerpt_limit(policy_case_and_store) -> None:
    """The spec's trace depends on the excerpt limit the run used: judged at another limit, it differs."""
    case, _, persisted = policy_case_and_store
    assert invariant_violations(case, persisted, excerpt_chars=2000) == []
    problems = invariant_violations(case, persisted, excerpt_chars=5)
    assert any(p.startswith("tool_trace_summary") for p in problems), problems


def test_expectation_mismatches_name_the_field(policy_case_and_store) -> None:
    case, evaluation, _ = policy_case_and_store
    wrong = evaluation.model_copy(update={"verdict": Verdict.PASS})
    assert policy_case_mismatches(case, wrong) == ['verdict: expected ["REJECT"], got PASS']


def test_case_views_never_judge_a_result_by_another_cases_data(policy_case_and_store) -> None:
    """Results of two cases with different traces, interleaved through one `CaseViews` (scoring keeps one per
    stream): each is judged by its own case, exactly as without the kept view, and so is a result judged against
    the other case, or at another excerpt limit."""
    case_a, _, persisted_a = policy_case_and_store
    invocations = [
        inv.model_copy(update={"result": f"{inv.result} (second incident)"}) for inv in case_a.session.tool_invocations
    ]
    case_b = case_a.model_copy(
        update={"id": "pol-other", "session": case_a.session.model_copy(update={"tool_invocations": invocations})}
    )
    _, persisted_b = asyncio.run(run_case(case_b, scripted_verifier_for(case_b)))
    assert case_a.trace_json(2000) != case_b.trace_json(2000)
    views = CaseViews()

    def judged(case, persisted, excerpt_chars=2000) -> list[str]:
        kept = invariant_violations(case, persisted, excerpt_chars, view=views.get(case, excerpt_chars))
        assert kept == invariant_violations(case, persisted, excerpt_chars)
        return kept

    for _ in range(2):
        assert judged(case_a, persisted_a) == [] and judged(case_b, persisted_b) == []
    crossed = judged(case_b, persisted_a)
    assert any(p.startswith("tool_trace_summary") for p in crossed), crossed
    assert judged(case_a, persisted_a, excerpt_chars=5) != []
    assert judged(case_a, persisted_a) == []
