"""A verify request whose rows cannot fit one store (INTERPRETATION §2: invocation ids are unique within a
session's store) is refused with a message naming the key, not taken in and failed later by the store."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from harness.system.protocol import VerifyRequest


def body(invocation_ids: list[str], other_ids: list[str] | None = None) -> dict[str, Any]:
    rows = [{"id": i, "tool_name": "query_logs"} for i in invocation_ids]
    return {
        "session": {
            "id": "s1",
            "question": "why?",
            "tool_invocations": rows,
            "other_sessions": [{"id": o, "tool_invocations": []} for o in other_ids or []],
        },
        "executor": {"final_answer": "", "structured_output_raw": None},
        "verifier": {"base_url": "http://127.0.0.1:1/v1", "model": "m"},
    }


def test_distinct_ids_are_accepted() -> None:
    request = VerifyRequest.model_validate(body(["inv-1", "inv-2"], ["s2"]))
    assert [inv.id for inv in request.session.tool_invocations] == ["inv-1", "inv-2"]


def test_a_repeated_invocation_id_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match=r"tool_invocations: invocation id 'inv-1' repeats"):
        VerifyRequest.model_validate(body(["inv-1", "inv-2", "inv-1"]))


def test_an_other_session_with_the_current_session_id_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"session id 's1' repeats"):
        VerifyRequest.model_validate(body(["inv-1"], ["s1"]))
