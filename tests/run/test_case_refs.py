"""A run keeps its cases as compact refs (`harness.run.caseref`) and validates each unit's case when it runs: every
unit must run on its own case, and on the content that was validated and hashed when the run loaded it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from harness.corpus.loader import load_cases
from harness.run.caseref import CaseRef
from harness.run.folder import read_results
from harness.run.runner import run_study
from harness.run.study import Study
from harness.system.models import VerifierCall, VerifierInput
from harness.system.verifiers.base import VerifierBase
from tests.run.corpus_builder import quality_case

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
    refs = [CaseRef.of(c) for c in load_cases([corpus])]
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
