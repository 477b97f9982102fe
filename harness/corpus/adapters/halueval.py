"""HaluEval QA (one-turn): a knowledge passage, a question, a supported and a hallucinated answer.

Each record becomes two quality cases: the passage is what one
`search_knowledge_base` call returned, and the answer is the executor's one
critical, confirmed claim bound to that call. The gold labels follow the data
set (INTERPRETATION §4): the right answer is `direct_observation` or
`reasonable_inference` (HaluEval's answers are often multi-hop), the
hallucinated one `contradicted` or `unsupported`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.corpus.adapters.base import RecordError
from harness.corpus.schema import Case, CaseExecutor, CaseSession, Expected, ExpectedGatekeeper
from harness.system.models import Derivability, ToolInvocation, Verdict

NAME = "halueval-qa"
DATASET = "HaluEval QA (one-turn), RUCAIBox/HaluEval generation/qa/qa_one-turn_data.json"
LICENCE_NOTE = "MIT License, Copyright (c) 2020 RUCAIBox; HaluEval (Li et al., EMNLP 2023)"
LICENCE_TEXT = """\
MIT License

Copyright (c) 2020 RUCAIBox

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

DESCRIPTION = """\
Each record (a knowledge passage, a question, a right and a hallucinated answer)
becomes two quality cases, `<line>-supported` and `<line>-hallucinated`. The
passage is the result of one `search_knowledge_base` invocation made with the
question; the answer is the executor's final answer and its single critical,
confirmed claim `C1`, bound to that invocation (trace_ref T1). Gold labels come
from the data set (INTERPRETATION §4): the right answer is `direct_observation`
or `reasonable_inference` (verdict PASS or LOW_CONFID), the hallucinated one
`contradicted` or `unsupported` (verdict REJECT or LOW_CONFID). Question,
answer and passage are stripped of surrounding whitespace; nothing else is
changed.
"""

FIELDS = ("knowledge", "question", "right_answer", "hallucinated_answer")
TOOL_NAME = "search_knowledge_base"
INVOCATION_ID = "inv-kb-1"

Side = Literal["supported", "hallucinated"]
_SCENARIO = "chat-verifier-agent/verifier-shall-fact-check-executor-answers/"
SPEC: dict[Side, list[str]] = {
    "supported": [
        _SCENARIO + "pass-verdict-when-all-claims-have-evidence",
        _SCENARIO + "low-confid-verdict-with-only-inference-support",
    ],
    "hallucinated": [
        _SCENARIO + "reject-verdict-when-claims-contradict-evidence",
        _SCENARIO + "low-confid-verdict-with-partial-evidence",
    ],
}
LABELS: dict[Side, list[Derivability]] = {
    "supported": [Derivability.DIRECT_OBSERVATION, Derivability.REASONABLE_INFERENCE],
    "hallucinated": [Derivability.CONTRADICTED, Derivability.UNSUPPORTED],
}
VERDICTS: dict[Side, list[Verdict]] = {
    "supported": [Verdict.PASS, Verdict.LOW_CONFID],
    "hallucinated": [Verdict.REJECT, Verdict.LOW_CONFID],
}
ANSWER_FIELD: dict[Side, str] = {"supported": "right_answer", "hallucinated": "hallucinated_answer"}


class HaluEvalQARecord(BaseModel):
    """One good line of the source file, its fields as written there."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    knowledge: str
    question: str
    right_answer: str
    hallucinated_answer: str

    @property
    def record_id(self) -> str:
        """Stable across files and line moves: a hash of the question and the passage."""
        blob = json.dumps([self.question, self.knowledge], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_line(raw: bytes, line: int, file: str) -> HaluEvalQARecord | RecordError | None:
    """One JSONL line as a record, an error naming the line, or None for a blank line."""

    def error(reason: str, message: str) -> RecordError:
        return RecordError(file=file, line=line, reason=reason, message=message)

    try:
        text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        return error("not UTF-8", f"byte {exc.start} cannot be decoded")
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return error("bad JSON", f"{exc.msg} (column {exc.colno})")
    if not isinstance(data, dict):
        return error("not an object", f"a record is a JSON object, not {type(data).__name__}")
    missing = [f for f in FIELDS if f not in data]
    if missing:
        return error("missing field", f"no key {_quoted(missing)}")
    mistyped = [f for f in FIELDS if not isinstance(data[f], str)]
    if mistyped:
        kinds = ", ".join(f"{f!r} is {_json_type(data[f])}" for f in mistyped)
        return error("wrong type", f"{kinds}; expected a string")
    empty = [f for f in FIELDS if not data[f].strip()]
    if empty:
        return error("empty field", f"{_quoted(empty)} holds only whitespace or nothing")
    if data["right_answer"].strip() == data["hallucinated_answer"].strip():
        return error("identical answers", "'right_answer' and 'hallucinated_answer' are the same text")
    return HaluEvalQARecord(file=file, line=line, **{f: data[f] for f in FIELDS})


def build_case(record: HaluEvalQARecord, side: Side) -> Case:
    """One quality case: the passage as the tool result, the answer as the single critical claim."""
    question = record.question.strip()
    answer = getattr(record, ANSWER_FIELD[side]).strip()
    return Case(
        id=f"{NAME}-{record.line:04d}-{side}",
        title=f"HaluEval QA line {record.line}, {side} answer: {_shorten(question, 90)}",
        spec=SPEC[side],
        tags=["external", NAME, side],
        meta={
            "dataset": NAME,
            "source": DATASET,
            "source_file": record.file,
            "source_line": record.line,
            "source_record_id": record.record_id,
            "answer": ANSWER_FIELD[side],
            "licence": LICENCE_NOTE,
        },
        session=CaseSession(
            question=question,
            tool_invocations=[
                ToolInvocation(
                    id=INVOCATION_ID,
                    tool_name=TOOL_NAME,
                    arguments={"query": question},
                    status="success",
                    result=record.knowledge.strip(),
                )
            ],
        ),
        executor=CaseExecutor(
            final_answer=answer,
            structured_output={
                "schema_version": "executor_evidence_v2",
                "claims": [
                    {
                        "claim_id": "C1",
                        "statement": answer,
                        "status": "confirmed",
                        "critical": True,
                        "evidence_bindings": [
                            {"trace_ref": "T1", "tool_name": TOOL_NAME, "source_invocation_ids": [INVOCATION_ID]}
                        ],
                    }
                ],
            },
        ),
        expected=Expected(
            parse_status="valid",
            gatekeeper=ExpectedGatekeeper(status="pass", failed_rules=[], warnings=[]),
            claims={"C1": LABELS[side]},
            verdict=VERDICTS[side],
        ),
    )


class HaluEvalQA:
    """The HaluEval QA adapter (see the module docstring)."""

    name = NAME
    dataset = DATASET
    description = DESCRIPTION
    licence_note = LICENCE_NOTE
    licence_text = LICENCE_TEXT

    def records(self, path: Path) -> Iterator[tuple[int, HaluEvalQARecord | RecordError]]:
        """Every non-blank line of a JSONL file, read line by line so one bad line spoils nothing else."""
        with path.open("rb") as fh:
            for line_no, raw in enumerate(fh, start=1):
                parsed = parse_line(raw, line_no, path.name)
                if parsed is not None:
                    yield line_no, parsed

    def to_cases(self, record: HaluEvalQARecord) -> list[Case]:
        return [build_case(record, "supported"), build_case(record, "hallucinated")]


def _quoted(fields: list[str]) -> str:
    return ", ".join(repr(f) for f in fields)


def _json_type(value: object) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "an array", dict: "an object"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
