"""The scheduler: each worker finishes a case in its own store before the next; crashes become records."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from harness.corpus.loader import load_cases
from harness.run import schedule
from harness.run.folder import read_results
from harness.run.log import ResultRecord
from harness.run.runner import run_study
from harness.run.study import Study
from harness.system import pipeline
from harness.system.models import VerifierCall, VerifierInput
from tests.run.corpus_builder import write_corpus
from tests.run.fakes import FakeVerifier

QUALITY = ["q1", "q2", "q3", "q4", "q5"]


class LoggingVerifier(FakeVerifier):
    """The scripted fake, noting when each call starts; it yields like a model call would."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        self.events.append("call " + inputs.question.split("]")[0].lstrip("["))
        await asyncio.sleep(0.005)
        return await super().verify(inputs)


class LoggingProgress(schedule.SilentProgress):
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def advance(self, record: ResultRecord) -> None:
        self.events.append("emit " + record.case_id)


def run(tmp_path: Path, corpus: Path, events: list[str], concurrency: int = 1) -> list[ResultRecord]:
    study = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None, concurrency=concurrency)
    out = tmp_path / "run"
    run_study(study, load_cases([corpus]), out, lambda v, e: LoggingVerifier(events), LoggingProgress(events))
    return read_results(out)


def test_one_worker_finishes_each_case_before_it_calls_for_the_next(tmp_path: Path) -> None:
    events: list[str] = []
    corpus = write_corpus(tmp_path / "cases", QUALITY, with_policy=False)
    records = run(tmp_path, corpus, events)
    assert len(records) == 5 and not any(r.error for r in records)
    assert events == [f"{step} {case}" for case in QUALITY for step in ("call", "emit")]


def test_each_case_is_persisted_in_its_own_store_even_with_one_session_id(tmp_path: Path) -> None:
    """Workers share no store, and a reused store holds only its current case: no case sees another's rows."""
    corpus = write_corpus(tmp_path / "cases", QUALITY, with_policy=False)
    for case_id in QUALITY:
        path = corpus / f"{case_id}.yaml"
        data = yaml.safe_load(path.read_text())
        data["session"]["id"] = "sess-shared"  # every case writes the same diagnosis_session row id
        data["session"]["self_evaluation"] = {f"note_{case_id}": case_id}
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    records = run(tmp_path, corpus, [], concurrency=2)
    assert len(records) == 5
    for record in records:
        siblings = {k for k in (record.persisted or {}) if k != "verifier_evaluation"}
        assert siblings == {f"note_{record.case_id}"}, record.case_id
        assert record.sibling_keys == [f"note_{record.case_id}"]


def test_a_crash_in_the_second_half_is_recorded_and_the_run_goes_on(tmp_path: Path, monkeypatch) -> None:
    real = pipeline.conclude_with_reply

    def conclude(prepared, call, settings):  # the step after the verifier's reply
        if "[q2]" in prepared.inputs.question:
            raise RuntimeError("disk on fire")
        return real(prepared, call, settings)

    monkeypatch.setattr(pipeline, "conclude_with_reply", conclude)
    corpus = write_corpus(tmp_path / "cases", QUALITY, with_policy=False)
    records = {r.case_id: r for r in run(tmp_path, corpus, [])}
    assert set(records) == set(QUALITY)
    assert records["q2"].error == "harness_error: RuntimeError: disk on fire" and records["q2"].verdict is None
    assert all(records[c].error is None and records[c].verdict for c in QUALITY if c != "q2")
