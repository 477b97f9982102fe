"""A run keeps its cases as compact refs (`harness.run.caseref`) and validates each unit's case when it runs: every
unit must run on its own case, and on the content that was validated and hashed when the run loaded it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from harness.app.phases import LOAD_CASES, watching
from harness.cli import main
from harness.corpus.loader import CorpusError, load_cases
from harness.corpus.schema import Case
from harness.run.caseref import CaseRef
from harness.run.folder import CASES_FILE, read_results
from harness.run.log import ResultRecord
from harness.run.runner import run_study
from harness.run.select import load_case_refs
from harness.run.study import Study
from harness.system.models import VerifierCall, VerifierInput
from harness.system.verifiers.base import VerifierBase
from tests.run.corpus_builder import quality_case, write_corpus

CASES = Path(__file__).resolve().parents[2] / "cases"


@pytest.mark.parametrize("folder", ["policy", "quality", "generated", "external"])
def test_a_committed_case_loads_back_from_its_ref_as_it_was_validated_and_hashed(folder: str) -> None:
    for case in load_cases([CASES / folder]):
        ref = CaseRef.of(case)
        again = ref.load()
        assert again.model_dump(by_alias=True) == case.model_dump(by_alias=True), case.id
        assert (ref.id, ref.kind, ref.hash) == (case.id, case.kind, case.content_hash())
        assert again.content_hash() == ref.hash, case.id


class EchoVerifier(VerifierBase):
    """Answers PASS on both claims, with the question and the first tool result it was given as its rationale."""

    name = "echo"

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        await asyncio.sleep(0)  # let the other workers' cases interleave with this one
        checks = [
            {"claim_id": cid, "verification": "direct_observation", "detail": "", "evidence_refs": []}
            for cid in ("C1", "C2")
        ]
        seen = f"{inputs.question} || {inputs.tool_trace_summary[0].result_excerpt}"
        reply = {
            "verdict": "PASS",
            "groundedness_score": 0.9,
            "critical_fact_count": 2,
            "claim_checks": checks,
            "facts_checked": [],
            "rationale": seen,
        }
        return VerifierCall(raw_reply=json.dumps(reply), model=self.name)

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "prompt": {"name": "p", "version": "1", "hash": "hash-p"}}


def distinct_case(i: int) -> dict:
    """A quality case with its own id, question, first tool result and gold verdict."""
    data = quality_case("q1")
    data["id"] = f"c{i:02d}"
    data["session"]["question"] = f"[c{i:02d}] carts fail to load, why?"
    data["session"]["tool_invocations"][0]["result"] += f" (only in case c{i:02d})"
    data["expected"]["verdict"] = ["PASS", "LOW_CONFID", "REJECT"][i % 3]
    return data


def test_every_unit_runs_on_its_own_case(tmp_path: Path) -> None:
    corpus = tmp_path / "cases"
    corpus.mkdir()
    for i in range(24):
        (corpus / f"c{i:02d}.yaml").write_text(yaml.safe_dump(distinct_case(i), sort_keys=False))
    refs, policy = load_case_refs([corpus])
    assert policy == 0 and len(refs) == 24
    study = Study(cases=[corpus], models=["openai:echo"], prompts=["p1", "p2"], epochs=2, concurrency=8, cache=None)
    run_study(study, refs, tmp_path / "run", lambda v, e: EchoVerifier())
    records = read_results(tmp_path / "run")
    assert len(records) == 24 * 2 * 2
    hashes = {r.id: r.hash for r in refs}
    for record in records:
        i = int(record.case_id[1:])
        seen = json.loads(record.raw_reply or "{}")["rationale"]
        assert seen.startswith(f"[{record.case_id}] ") and seen.endswith(f"(only in case {record.case_id})"), seen
        assert record.case_hash == hashes[record.case_id]
        assert record.gold.verdict == [["PASS", "LOW_CONFID", "REJECT"][i % 3]]


def test_each_unit_validates_its_case_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy unit's scripted verifier is made from the case the unit loaded, not from a second validation."""
    corpus = write_corpus(tmp_path / "cases")
    refs, policy = load_case_refs([corpus])
    assert policy == 1
    loads: list[str] = []
    real_load = CaseRef.load

    def counted(ref: CaseRef) -> Case:
        loads.append(ref.id)
        return real_load(ref)

    monkeypatch.setattr(CaseRef, "load", counted)
    study = Study(cases=[corpus], models=["openai:echo"], prompts=["p1"], cache=None)
    run_study(study, refs, tmp_path / "run", lambda v, e: EchoVerifier())
    records = read_results(tmp_path / "run")
    assert any(r.kind == "policy" and not r.error for r in records) and not any(r.error for r in records)
    assert sorted(loads) == sorted(r.case_id for r in records)  # one validation per unit, policy units included


def rewrite_cases(corpus: Path) -> None:
    """Every quality case's file says something else: another question, and C1 cites an invocation never run
    (the gatekeeper fails it, so the offline verdict is REJECT)."""
    for path in sorted(corpus.glob("q*.yaml")):
        data = yaml.safe_load(path.read_text())
        data["session"]["question"] = "[q1] something else entirely?"
        data["executor"]["structured_output"]["claims"][0]["evidence_bindings"][0]["source_invocation_ids"] = ["inv-r9"]
        path.write_text(yaml.safe_dump(data, sort_keys=False))


def outcomes(run_dir: Path) -> list[tuple[object, ...]]:
    """What each record says about its case (its persisted evaluation without the one timing in it)."""

    def row(r: ResultRecord) -> tuple[object, ...]:
        persisted = json.loads(json.dumps(r.persisted))
        persisted["verifier_evaluation"]["verifier"].pop("latency_ms")
        return (r.case_id, r.case_hash, r.parse_status, r.gatekeeper, r.claims, r.verdict, r.gold, persisted)

    return sorted(row(r) for r in read_results(run_dir))


def offline_run(corpus: Path, out: Path) -> int:
    return main(["run", "--cases", str(corpus), "--out", str(out), "--no-cache", "--no-report"])


def test_a_case_file_changed_between_loading_and_running_does_not_change_the_run(tmp_path: Path) -> None:
    offline_run(write_corpus(tmp_path / "as-loaded"), tmp_path / "as-loaded-run")
    changed = write_corpus(tmp_path / "changed")
    rewrite_cases(changed)
    offline_run(changed, tmp_path / "changed-run")
    # not hollow: the rewritten files give other hashes and outcomes
    assert outcomes(tmp_path / "changed-run") != outcomes(tmp_path / "as-loaded-run")

    corpus = write_corpus(tmp_path / "cases")

    def rewrite_after_loading(name: str, cpu: float, wall: float) -> None:
        if name == LOAD_CASES:  # after `vbench run` loaded and hashed the cases, before any unit runs
            rewrite_cases(corpus)

    with watching(rewrite_after_loading):
        offline_run(corpus, tmp_path / "run")
    assert Case.model_validate(yaml.safe_load((corpus / "q1.yaml").read_text())).session.question.startswith(
        "[q1] something else"
    )
    assert outcomes(tmp_path / "run") == outcomes(tmp_path / "as-loaded-run")
    assert (tmp_path / "run" / CASES_FILE).read_bytes() == (tmp_path / "as-loaded-run" / CASES_FILE).read_bytes()


def test_load_case_refs_keeps_what_the_filters_admit_and_counts_the_policy_cases_before_them(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases")
    refs, policy = load_case_refs([corpus], ["kind:quality", "id:q[12]"])
    assert policy == 1 and [r.id for r in refs] == ["q1", "q2"]
    assert {r.id: r.hash for r in refs} == {
        c.id: c.content_hash() for c in load_cases([corpus]) if c.id in ("q1", "q2")
    }


def test_load_case_refs_returns_nothing_when_a_case_file_is_broken(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases")
    (corpus / "zz-broken.yaml").write_text("id: zz\ntitle: [unclosed\n")
    with pytest.raises(CorpusError) as raised:
        load_case_refs([corpus])
    assert [e.file for e in raised.value.errors] == [str(corpus / "zz-broken.yaml")]
