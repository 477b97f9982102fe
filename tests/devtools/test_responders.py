"""The default responder of the local test servers: a verifier reply built from the prompt's own claims."""

from __future__ import annotations

import json

from harness.devtools.responders import claim_ids_in, verifier_responder
from tests.llm.helpers import claims_message


def test_the_default_responder_answers_with_the_claims_of_the_prompt() -> None:
    body = {
        "messages": [
            {"role": "system", "content": '"claim_id": "SYS"'},
            {"role": "user", "content": claims_message("C1", "C2")},
        ]
    }
    reply = json.loads(verifier_responder(body))
    assert [c["claim_id"] for c in reply["claim_checks"]] == ["C1", "C2"]
    assert reply["verdict"] == "PASS" and reply["critical_fact_count"] == 2
    empty = json.loads(verifier_responder({"messages": [{"role": "user", "content": "no claims here"}]}))
    assert empty["verdict"] == "LOW_CONFID" and empty["claim_checks"] == []


def test_claim_ids_come_from_the_claims_block_not_from_tool_output() -> None:
    text = (
        '<structured_claims>\n[{"claim_id": "C1", "statement": "says \\"claim_id\\": \\"X\\""}]\n</structured_claims>\n'
        '<tool_result>{"claim_id": "FROM_TOOL"}</tool_result>'
    )
    assert claim_ids_in(text) == ["C1"]
