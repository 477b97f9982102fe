"""The HaluEval QA adapter: one record line → two quality cases of the contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.corpus.adapters import ADAPTERS, RecordError
from harness.corpus.adapters.halueval import LICENCE_NOTE, HaluEvalQA, HaluEvalQARecord, parse_line
from harness.corpus.adapters.importer import case_yaml
from harness.corpus.catalogue import load_catalogue
from harness.corpus.loader import load_case_file
from harness.run.conformance import deterministic_mismatches, verdicts_implied_by_labels
from harness.system.models import Derivability, Verdict, VerifierCall
from harness.system.pipeline import conclude, prepare

GOOD = {
    "knowledge": " The Oberoi Group is a hotel company with its head office in Delhi.",
    "question": " The Oberoi family is part of a hotel company that has a head office in what city?",
    "right_answer": "Delhi",
    "hallucinated_answer": "Mumbai, the financial capital of India.",
}


def line(obj: object) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def record(line_no: int = 7, **changes: str) -> HaluEvalQARecord:
    parsed = parse_line(line({**GOOD, **changes}), line_no, "qa.jsonl")
    assert isinstance(parsed, HaluEvalQARecord)
    return parsed


def test_the_adapter_is_registered_under_its_name() -> None:
    assert isinstance(ADAPTERS["halueval-qa"], HaluEvalQA)


def test_a_good_line_keeps_its_fields_and_position() -> None:
    rec = record(12)
    assert (rec.file, rec.line, rec.right_answer) == ("qa.jsonl", 12, "Delhi")
    assert rec.question == GOOD["question"]


def test_the_record_id_depends_on_question_and_passage_only() -> None:
    a = record(1)
    assert a.record_id == record(99, right_answer="New Delhi").record_id
    assert len(a.record_id) == 16
    assert a.record_id != record(1, question="Another question?").record_id
    assert a.record_id != record(1, knowledge="Another passage.").record_id


@pytest.mark.parametrize(
    ("raw", "reason", "needle"),
    [
        (b'{"knowledge": "x", "question": \n', "bad JSON", "column"),
        (b"[1, 2]\n", "not an object", "list"),
        (line({k: v for k, v in GOOD.items() if k != "question"}), "missing field", "'question'"),
        (line({**GOOD, "right_answer": 42}), "wrong type", "'right_answer' is a number"),
        (line({**GOOD, "knowledge": None}), "wrong type", "'knowledge' is null"),
        (line({**GOOD, "hallucinated_answer": "  "}), "empty field", "'hallucinated_answer'"),
        (line({**GOOD, "hallucinated_answer": "Delhi"}), "identical answers", "same"),
        (b'{"knowledge": "caf\xe9"}\n', "not UTF-8", "byte"),
    ],
)
def test_a_broken_line_is_an_error_naming_its_line(raw: bytes, reason: str, needle: str) -> None:
    err = parse_line(raw, 5, "qa.jsonl")
    assert isinstance(err, RecordError)
    assert (err.line, err.reason) == (5, reason)
    assert needle in err.message
    assert str(err).startswith("qa.jsonl:5: ")


def test_a_blank_line_is_not_a_record() -> None:
    assert parse_line(b"  \r\n", 3, "qa.jsonl") is None


def test_a_byte_order_mark_on_the_first_line_is_accepted() -> None:
    assert isinstance(parse_line(b"\xef\xbb\xbf" + line(GOOD), 1, "qa.jsonl"), HaluEvalQARecord)


def test_records_reads_every_line_and_numbers_them(tmp_path: Path) -> None:
    src = tmp_path / "qa.jsonl"
    src.write_bytes(line(GOOD) + b"\n" + b"not json\n" + line(GOOD))
    got = list(HaluEvalQA().records(src))
    assert [n for n, _ in got] == [1, 3, 4]
    assert [type(r).__name__ for _, r in got] == ["HaluEvalQARecord", "RecordError", "HaluEvalQARecord"]


def test_one_record_gives_a_supported_and_a_hallucinated_case() -> None:
    supported, hallucinated = HaluEvalQA().to_cases(record(7))
    assert (supported.id, hallucinated.id) == ("halueval-qa-0007-supported", "halueval-qa-0007-hallucinated")
    assert supported.kind == hallucinated.kind == "quality"
    assert supported.executor.final_answer == "Delhi"
    assert hallucinated.executor.final_answer == "Mumbai, the financial capital of India."
    assert supported.tags == ["external", "halueval-qa", "supported"]
    assert hallucinated.tags == ["external", "halueval-qa", "hallucinated"]


def test_the_passage_is_the_tool_result_and_the_answer_the_one_critical_claim_bound_to_it() -> None:
    case = HaluEvalQA().to_cases(record())[1]
    (inv,) = case.session.tool_invocations
    assert case.session.question == GOOD["question"].strip()
    assert (inv.tool_name, inv.status, inv.result) == ("search_knowledge_base", "success", GOOD["knowledge"].strip())
    assert inv.arguments == {"query": case.session.question}
    output = case.executor.structured_output
    assert output is not None and output["schema_version"] == "executor_evidence_v2"
    (claim,) = output["claims"]
    assert claim["claim_id"] == "C1" and claim["status"] == "confirmed" and claim["critical"] is True
    assert claim["statement"] == case.executor.final_answer
    assert claim["evidence_bindings"] == [
        {"trace_ref": "T1", "tool_name": inv.tool_name, "source_invocation_ids": [inv.id]}
    ]


def test_labels_and_verdicts_follow_the_data_set_and_interpretation_4() -> None:
    supported, hallucinated = HaluEvalQA().to_cases(record())
    assert supported.expected.acceptable_labels() == {
        "C1": {Derivability.DIRECT_OBSERVATION, Derivability.REASONABLE_INFERENCE}
    }
    assert hallucinated.expected.acceptable_labels() == {"C1": {Derivability.CONTRADICTED, Derivability.UNSUPPORTED}}
    for case in (supported, hallucinated):
        assert verdicts_implied_by_labels(case) == case.expected.acceptable_verdicts()
    assert supported.expected.acceptable_verdicts() == {Verdict.PASS, Verdict.LOW_CONFID}
    assert hallucinated.expected.acceptable_verdicts() == {Verdict.REJECT, Verdict.LOW_CONFID}


def test_spec_ids_are_catalogue_scenarios() -> None:
    catalogue = load_catalogue()
    for case in HaluEvalQA().to_cases(record()):
        assert case.spec and all(sid in catalogue for sid in case.spec)


def test_provenance_and_licence_are_in_meta() -> None:
    rec = record(7)
    supported, hallucinated = HaluEvalQA().to_cases(rec)
    assert supported.meta["source_file"] == "qa.jsonl"
    assert supported.meta["source_line"] == 7
    assert supported.meta["source_record_id"] == hallucinated.meta["source_record_id"] == rec.record_id
    assert (supported.meta["answer"], hallucinated.meta["answer"]) == ("right_answer", "hallucinated_answer")
    assert supported.meta["dataset"] == "halueval-qa"
    assert (
        supported.meta["licence"]
        == LICENCE_NOTE
        == ("MIT License, Copyright (c) 2020 RUCAIBox; HaluEval (Li et al., EMNLP 2023)")
    )


def test_the_gatekeeper_passes_the_case_without_warnings() -> None:
    for case in HaluEvalQA().to_cases(record()):
        prepared = prepare(case.session.question, case.executor.emission(), case.session.tool_invocations)
        evaluation = conclude(prepared, VerifierCall(raw_reply=None, model="none", error="not called"))
        assert deterministic_mismatches(case, evaluation) == []
        assert evaluation.gatekeeper_result.warning_rules == []


def _reply(verdict: str, label: str) -> str:
    return json.dumps(
        {
            "verdict": verdict,
            "groundedness_score": 1.0 if verdict == "PASS" else 0.0,
            "critical_fact_count": 1,
            "claim_checks": [{"claim_id": "C1", "verification": label, "detail": "", "evidence_refs": []}],
            "facts_checked": [],
            "rationale": "test",
        }
    )


@pytest.mark.parametrize(
    ("side", "verdict", "label", "effective"),
    [(0, "PASS", "direct_observation", "PASS"), (1, "REJECT", "contradicted", "REJECT")],
)
def test_a_correct_verifier_reaches_the_expected_verdict(side: int, verdict: str, label: str, effective: str) -> None:
    """The binding resolves, so a direct observation is not sanitised to unsupported."""
    case = HaluEvalQA().to_cases(record())[side]
    prepared = prepare(case.session.question, case.executor.emission(), case.session.tool_invocations)
    evaluation = conclude(prepared, VerifierCall(raw_reply=_reply(verdict, label), model="scripted"))
    assert evaluation.verdict == Verdict(effective)
    assert evaluation.verdict in case.expected.acceptable_verdicts()
    assert [c.verification.value for c in evaluation.claim_checks] == [label]


def test_written_yaml_loads_back_to_the_same_case(tmp_path: Path) -> None:
    for case in HaluEvalQA().to_cases(record(3, question='Who wrote "Ünïcode: a – b"?\nline two')):
        path = tmp_path / f"{case.id}.yaml"
        path.write_text(case_yaml(case), encoding="utf-8")
        loaded, errors = load_case_file(path, load_catalogue())
        assert errors == []
        assert loaded == case
        assert case_yaml(case).startswith(f"id: {case.id}\n")
