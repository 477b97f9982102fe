"""The runner and summary.json on a small corpus whose right answers are computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus.loader import load_cases
from harness.run.caseref import CaseRef
from harness.run.folder import read_results
from harness.run.plan import ResumeError, build_variants, plan_tasks
from harness.run.runner import run_study
from harness.run.study import Study
from harness.score.scoring import GateSettings, score_run
from tests.run.corpus_builder import write_corpus
from tests.run.fakes import FakeVerifier


def run(tmp_path: Path, **study_kwargs) -> tuple[dict, Path, list[FakeVerifier]]:
    corpus = write_corpus(tmp_path / "cases")
    study = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None, concurrency=3, **study_kwargs)
    made: list[FakeVerifier] = []

    def factory(variant, epoch):
        made.append(FakeVerifier(prompt=variant.prompt))
        return made[-1]

    out = tmp_path / "run"
    run_study(study, load_cases([corpus]), out, factory)
    return score_run(out, GateSettings()).to_json(), out, made


def test_summary_figures_match_hand_computation(tmp_path: Path) -> None:
    summary, _, _ = run(tmp_path)
    v = summary["variants"][0]
    assert v["name"] == "openai:fake@p1" and v["model"] == "openai:fake" and v["prompt"] == "p1"
    assert v["prompt_hash"] == "hash-p1"
    # q1..q7 attempted; q7 had no reply at all (transport failure) and is left out of the rates
    assert (v["quality_cases"], v["errors"]) == (7, 1)
    # claims right: q1 2, q2 1, q3 2 (overstated is acceptable), q4 1, q5 2, q6 0 (invalid reply -> unsupported) = 8 of 12
    assert v["claim_accuracy"] == pytest.approx(8 / 12)
    # effective verdicts: q1 PASS ok, q2 PASS wrong, q3 LOW_CONFID ok, q4 PASS wrong, q5 REJECT (guard) ok, q6 LOW_CONFID (invalid) ok
    assert v["verdict_accuracy"] == pytest.approx(4 / 6)
    # model's own verdicts: q1 ok, q3 ok; q2, q4, q5 PASS wrong; q6 none
    assert v["model_verdict_accuracy"] == pytest.approx(2 / 6)
    # cases whose acceptable verdicts exclude PASS: q2, q4, q5, q6; effective PASS on q2 and q4
    assert v["unsafe_pass_rate"] == pytest.approx(2 / 4)
    assert v["invalid_reply_rate"] == pytest.approx(1 / 6)
    assert v["invalid_reasons"] == {"not_json": 1}
    assert v["guard_intervention_rate"] == pytest.approx(1 / 6)
    for name in ("claim_accuracy", "verdict_accuracy", "model_verdict_accuracy", "unsafe_pass_rate"):
        low, high = v[f"{name}_ci"]
        assert isinstance(v[name], float) and low <= v[name] <= high
    # six-class confusion: gold rows, predicted columns (labels in Derivability order)
    labels = v["claim_confusion"]["labels"]
    matrix = v["claim_confusion"]["matrix"]
    assert matrix[labels.index("contradicted")][labels.index("direct_observation")] == 1  # q2 C2
    assert matrix[labels.index("unsupported")][labels.index("direct_observation")] == 1  # q4 C1
    assert matrix[labels.index("direct_observation")][labels.index("unsupported")] == 1  # q6 C1
    assert matrix[labels.index("external_unknown")][labels.index("unsupported")] == 1  # q6 C2
    assert sum(map(sum, matrix)) == 12
    assert v["per_class"]["contradicted"] == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3), "support": 2}
    assert v["tokens"]["total"] == 120 * 6  # q1..q6 replied (q6 in prose); q7 never did
    assert v["per_tag"]["demo"]["cases"] == 6
    conf = summary["conformance"]
    assert (conf["policy_cases"], conf["policy_passed"], conf["invariant_violations"]) == (1, 1, 0)
    # q7 got no reply: an incomplete measurement fails the default error-rate gate, and only that
    assert [g["gate"] for g in summary["gates"] if not g["passed"]] == ["error_rate<=0.0"]
    assert summary["passed"] is False


def test_records_carry_the_contract_keys(tmp_path: Path) -> None:
    _, out, _ = run(tmp_path)
    records = read_results(out)
    assert len(records) == 8  # 7 quality + 1 policy
    q2 = next(r for r in records if r.case_id == "q2").model_dump()
    for key in (
        "case_id",
        "kind",
        "variant",
        "epoch",
        "parse_status",
        "gatekeeper",
        "claims",
        "model_verdict",
        "verdict",
        "error",
        "case_hash",
        "raw_reply",
        "adjustments",
        "gold",
        "latency_ms",
        "usage",
    ):
        assert key in q2
    assert q2["claims"] == {"C1": "direct_observation", "C2": "direct_observation"}
    assert q2["gatekeeper"] == {"status": "pass", "failed_rules": [], "warnings": []}
    assert next(r for r in records if r.case_id == "q7").error == "timeout"


def test_epochs_give_stability(tmp_path: Path) -> None:
    summary, out, made = run(tmp_path, epochs=3)
    v = summary["variants"][0]
    assert len(read_results(out)) == 7 * 3 + 1
    # the fake answers the same every epoch: nothing is flaky
    assert v["stability"]["flaky"] == 0
    assert v["stability"]["stable_right"] == 4 and v["stability"]["stable_wrong"] == 2
    assert len(made) == 3  # one verifier per epoch (the cache key includes the epoch)


def test_plan_runs_policy_once_and_quality_per_variant_and_epoch(tmp_path: Path) -> None:
    cases = [CaseRef.of(c) for c in load_cases([write_corpus(tmp_path / "c")])]
    study = Study(cases=[tmp_path / "c"], models=["reference", "openai:a"], prompts=["p1", "p2"], epochs=2)
    variants = build_variants(study)
    assert [v.name for v in variants] == ["reference", "openai:a@p1", "openai:a@p2"]
    tasks = plan_tasks(cases, variants, study.epochs)
    assert sum(t.variant is None for t in tasks) == 1
    assert len(tasks) == 1 + 7 * 3 * 2


def test_a_second_run_into_the_same_folder_needs_resume(tmp_path: Path) -> None:
    run(tmp_path)
    corpus = tmp_path / "cases"
    study = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None)
    with pytest.raises(ResumeError):
        run_study(study, load_cases([corpus]), tmp_path / "run", lambda v, e: FakeVerifier())


def test_resume_skips_finished_work_and_refuses_other_settings(tmp_path: Path) -> None:
    summary, out, _ = run(tmp_path)
    corpus = tmp_path / "cases"
    again: list[FakeVerifier] = []

    def factory(variant, epoch):
        again.append(FakeVerifier())
        return again[-1]

    study = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None, resume=True)
    result = run_study(study, load_cases([corpus]), out, factory)
    assert result.skipped == 7  # q7 had no reply: it is tried again, the rest is not redone
    assert sum(v.calls for v in again) == 1
    assert (
        score_run(out, GateSettings()).variants[0].figure("claim_accuracy") == summary["variants"][0]["claim_accuracy"]
    )
    other = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None, resume=True, epochs=2)
    with pytest.raises(ResumeError):
        run_study(other, load_cases([corpus]), out, factory)


def test_a_crashing_verifier_is_recorded_and_the_run_finishes(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2"], with_policy=False)

    class Crashing(FakeVerifier):
        async def verify(self, inputs):
            raise RuntimeError("boom")

    study = Study(cases=[corpus], models=["openai:x"], prompts=["p"], cache=None)
    result = run_study(study, load_cases([corpus]), tmp_path / "run", lambda v, e: Crashing())
    assert [r.error for r in result.records] == ["harness_error: RuntimeError: boom"] * 2
    summary = score_run(tmp_path / "run", GateSettings()).to_json()
    assert summary["variants"][0]["errors"] == 2


def test_the_run_closes_every_verifier_it_built(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2"], with_policy=False)
    closed: list[int] = []

    class Closing(FakeVerifier):
        async def aclose(self) -> None:
            closed.append(id(self))

    built: list[Closing] = []

    def factory(variant, epoch):
        built.append(Closing())
        return built[-1]

    study = Study(cases=[corpus], models=["openai:x"], prompts=["p"], cache=None, epochs=2)
    run_study(study, load_cases([corpus]), tmp_path / "run", factory)
    assert len(built) == 2 and sorted(closed) == sorted(id(v) for v in built)  # one per epoch, each closed once


def test_on_start_is_called_once_after_the_verifiers_are_built_and_before_the_first_request(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2"], with_policy=False)
    study = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None, concurrency=2)
    made: list[FakeVerifier] = []
    seen: list[tuple[int, int]] = []  # (verifiers built, requests sent) at each call of on_start

    def factory(variant, epoch):
        made.append(FakeVerifier(prompt=variant.prompt))
        return made[-1]

    def on_start() -> None:
        seen.append((len(made), sum(v.calls for v in made)))

    run_study(study, load_cases([corpus]), tmp_path / "run", factory, on_start=on_start)
    assert seen == [(1, 0)]
    assert sum(v.calls for v in made) == 2
