"""A model of known quality for trying the prompt-regression recipe end to end, with no real model.

It serves the local OpenAI-compatible server and answers each request from the gold labels of the
case it recognises (by its question and final answer), so its quality is known in advance: right
for any prompt, except that it obeys one instruction a careless prompt edit might add
(`LENIENT_LINE`: accept every claim as observed and say PASS). A test double, not a judge:

    python -m tests.run.known_model --cases cases/quality --port-file /tmp/port &
    OPENAI_BASE_URL=http://127.0.0.1:$(cat /tmp/port)/v1 OPENAI_API_KEY=unused vbench run ...
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from pathlib import Path
from typing import Any

from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import last_user_message
from harness.system.prompts.variant import untrusted
from tests.run.prompt_models import LENIENT_LINE, system_text


def label_of(value: Any) -> str:
    first = value[0] if isinstance(value, list) else value
    return str(getattr(first, "value", first))


class KnownModel:
    """Request body -> reply text, from the gold of the case the request is about."""

    def __init__(self, cases: list[Case]) -> None:
        # the prompt shows question and final answer with section tags defused: match them as it shows them
        self.cases = [
            (untrusted(c.session.question), untrusted(c.executor.final_answer or ""), c)
            for c in cases
            if c.kind == "quality"
        ]

    def case_for(self, text: str) -> Case:
        for question, answer, case in self.cases:
            if question in text and answer in text:
                return case
        raise LookupError("no known case in this request")

    def __call__(self, body: dict[str, Any]) -> str:
        case = self.case_for(last_user_message(body))
        lenient = LENIENT_LINE in system_text(body)
        labels = {
            cid: "direct_observation" if lenient else label_of(ok) for cid, ok in (case.expected.claims or {}).items()
        }
        checks = [{"claim_id": c, "verification": v, "detail": "known", "evidence_refs": []} for c, v in labels.items()]
        return json.dumps(
            {
                "verdict": "PASS" if lenient else label_of(case.expected.verdict),
                "groundedness_score": 0.9,
                "critical_fact_count": len(checks),
                "claim_checks": checks,
                "facts_checked": [],
                "rationale": "known-quality test model",
            }
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, action="append", required=True)
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args(argv)
    server = LocalOpenAIServer(KnownModel(load_cases(args.cases)))
    with server:
        args.port_file.write_text(f"{server.port}\n")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        stop.wait()


if __name__ == "__main__":
    main()
