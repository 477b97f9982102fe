"""The harness's own CPU per case, stage by stage, with no network in the way.

The same steps `run_one` takes for an openai: model, in the same order, with
the reply the local server would give computed in-process (its cost is not
counted). Timed with `time.thread_time`, second pass only (the first warms
caches and imports), so the figures are CPU, not waiting.
"""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness.devtools.responders import verifier_responder
from harness.llm.types import ChatResponse
from harness.run.execute import load_case_into_store
from harness.run.records import record_from_run
from harness.system.pipeline import PipelineRun, conclude_with_reply, prepare
from harness.system.prompts import load_prompt
from harness.system.store import Store
from harness.system.verifiers.llm import LLMVerifier

STAGES = (
    "store: empty + load case",
    "store: read invocations",
    "parse + trace + gatekeeper",
    "prompt rendering",
    "reply -> VerifierCall",
    "reply validation + policy",
    "store: persist evaluation",
    "result record",
    "log line (JSON)",
)  # one mark after each, so len(marks) == len(STAGES) + 1


def stage_breakdown(cases_jsonl: Path, n: int | None = None, passes: int = 2) -> dict[str, Any]:
    """Mean CPU milliseconds per case for each stage, and their total."""
    from bench.data import MODEL, PROMPT, read_case_lines

    cases = read_case_lines(cases_jsonl)[: n or None]
    verifier = LLMVerifier(_Named(f"openai:{MODEL}"), load_prompt(PROMPT))
    replies = [_server_reply(verifier, case) for case in cases]  # the server's work: never counted
    hashes = {case.id: case.content_hash() for case in cases}  # once per run, as run_study does
    store = Store()
    sink = io.StringIO()
    spent: Counter[str] = Counter()
    for _ in range(passes):
        spent.clear()
        sink.seek(0)
        sink.truncate()
        for case, reply_text in zip(cases, replies, strict=True):
            marks = [time.thread_time()]
            emission = case.executor.emission()
            load_case_into_store(case, store, emission=emission)
            marks.append(time.thread_time())
            invocations = store.invocations(case.session_id)
            marks.append(time.thread_time())
            prepared = prepare(case.session.question, emission, invocations, case.session.tool_trace_summary)
            marks.append(time.thread_time())
            verifier.request_for(prepared.inputs)
            marks.append(time.thread_time())
            call = verifier.call_from(ChatResponse(text=reply_text, finish_reason="stop"))
            marks.append(time.thread_time())
            evaluation, reply = conclude_with_reply(prepared, call)
            marks.append(time.thread_time())
            persisted = store.write_verifier_evaluation(case.session_id, evaluation)
            marks.append(time.thread_time())
            run = PipelineRun(
                evaluation=evaluation,
                reply=reply,
                call=call,
                self_evaluation=persisted,
                cpu_ms=0.0,
                parsed=prepared.parsed,
                claims=prepared.claims,
            )
            record = record_from_run(case, f"openai:{MODEL}@{PROMPT}", 1, run, hashes[case.id])
            marks.append(time.thread_time())
            sink.write(record.model_dump_json() + "\n")
            marks.append(time.thread_time())
            for name, a, b in zip(STAGES, marks, marks[1:], strict=False):
                spent[name] += b - a
    store.close()
    per_case = {name: 1000.0 * spent[name] / len(cases) for name in STAGES}
    return {"cases": len(cases), "ms_per_case": per_case, "total_ms_per_case": sum(per_case.values())}


def _server_reply(verifier: LLMVerifier, case: Any) -> str:
    """What the local server answers for this case's request."""
    prepared = prepare(
        case.session.question, case.executor.emission(), case.session.tool_invocations, case.session.tool_trace_summary
    )
    request = verifier.request_for(prepared.inputs)
    return verifier_responder({"messages": [m.model_dump() for m in request.messages]})


class _Named:
    """A model stand-in for rendering: the stages never send anything."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def generate(self, request: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("rendering only")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


if __name__ == "__main__":  # pragma: no cover - handy by hand
    import sys

    print(json.dumps(stage_breakdown(Path(sys.argv[1])), indent=2))
