"""A case run reads the executor's claims once (issue 14, item 4): the pipeline reads them (`Prepared.claims`), and the
verifier (through its inputs), the policy and the result record reuse that reading instead of each reading them again."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.baselines.reference.verifier import ReferenceVerifier, build_reply
from harness.corpus.loader import load_cases
from harness.run.caseref import CaseRef
from harness.run.log import VariantInfo
from harness.run.schedule import Task, run_one
from harness.system import parser
from harness.system.pipeline import prepare
from harness.system.trace import DEFAULT_EXCERPT_CHARS
from tests.run.corpus_builder import write_corpus

CASES = Path(__file__).resolve().parents[2] / "cases"


def count_claim_readings(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the calls of `parser.executor_output` (the one reading of the claims) through every harness module that
    holds it, by calling module."""
    original = parser.executor_output
    calls: Counter[str] = Counter()

    def counting(parsed: Any) -> Any:
        calls[sys._getframe(1).f_globals["__name__"]] += 1
        return original(parsed)

    for name, module in list(sys.modules.items()):
        if name.startswith("harness") and getattr(module, "executor_output", None) is original:
            monkeypatch.setattr(module, "executor_output", counting)
    return calls


@pytest.mark.parametrize("kind", ["quality", "policy"])
def test_one_case_run_reads_the_executor_claims_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A quality unit (reference verifier, policy, record) and a policy unit (scripted reply, policy, record)."""
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    (case,) = [c for c in load_cases([corpus]) if c.kind == kind]
    variant = VariantInfo(name="reference", model="reference", prompt=None) if kind == "quality" else None
    task = Task(CaseRef.of(case), variant, 1 if variant else 0)
    calls = count_claim_readings(monkeypatch)
    record = asyncio.run(run_one(task, lambda _task: ReferenceVerifier(), DEFAULT_EXCERPT_CHARS))
    assert record.error is None
    # the one reading reached the verifier and the policy (a check per claim) and the record (its claim ids)
    assert record.executor_claim_ids == ["C1", "C2"] and record.critical_claims == ["C1", "C2"]
    assert sorted(record.claims) == ["C1", "C2"]
    assert sum(calls.values()) == 1, dict(calls)


def test_the_reference_verifier_replies_alike_with_or_without_the_pipelines_reading() -> None:
    """Inputs built by anyone else carry no `executor_claims`: the verifier then reads them itself, to the same reply."""
    for case in load_cases([CASES / "quality"])[:40]:
        emission = case.executor.emission()
        inputs = prepare(
            case.session.question, emission, case.session.tool_invocations, case.session.tool_trace_summary
        ).inputs
        assert inputs.executor_claims is not None
        alone = inputs.model_copy(update={"executor_claims": None})
        assert build_reply(alone) == build_reply(inputs), case.id
        assert "executor_claims" not in inputs.model_dump()  # never serialised (nor rendered into a prompt)
