"""Executor-output parser: valid / missing / malformed, never repaired (INTERPRETATION §2)."""

from __future__ import annotations

import json

import pytest

from harness.system.parser import parse_combined_message, parse_structured_output, split_combined_message


def test_nothing_emitted_is_missing() -> None:
    assert parse_structured_output(None).parse_status.status == "missing"
    assert parse_structured_output("   \n").parse_status.status == "missing"


@pytest.mark.parametrize(
    "raw",
    [
        '{"schema_version": "executor_evidence_v2", "claims": [ {"claim_',  # cut off
        '{"claims": [],}',  # trailing comma: not repaired
        "[1, 2]",  # not an object
        '"just a string"',
        '{"schema_version": "executor_evidence_v2"}',  # no claims list
        '{"claims": {"C1": "x"}}',  # claims not a list
        "Root cause: the pool is exhausted.",  # prose
    ],
)
def test_malformed_outputs(raw: str) -> None:
    parsed = parse_structured_output(raw)
    assert parsed.parse_status.status == "malformed"
    assert parsed.structured is None
    assert parsed.parse_status.reason


def test_valid_needs_only_a_readable_claims_list() -> None:
    parsed = parse_structured_output(json.dumps({"claims": [], "anything": 1}))
    assert parsed.parse_status.status == "valid"
    assert parsed.structured == {"claims": [], "anything": 1}


def test_combined_message_takes_the_last_fenced_json_block() -> None:
    message = 'The pool is exhausted.\n\n```json\n{"claims": [{"claim_id": "C1"}]}\n```\n'
    prose, parsed = parse_combined_message(message)
    assert prose == "The pool is exhausted."
    assert parsed.parse_status.status == "valid"
    assert parsed.structured == {"claims": [{"claim_id": "C1"}]}


def test_combined_message_without_block_is_missing_and_broken_block_is_malformed() -> None:
    assert parse_combined_message("only prose")[1].parse_status.status == "missing"
    _, parsed = parse_combined_message('text\n```json\n{"claims": [\n```')
    assert parsed.parse_status.status == "malformed"
    assert split_combined_message("a\n```json\n{}\n```\nb\n```json\n[]\n```")[1] == "[]"


@pytest.mark.parametrize(
    "raw", ['{"claims": [], "claims": []}', '{"claims": [{"score": NaN}]}', '{"claims": []} {"x": 1}']
)
def test_text_that_is_not_strictly_json_is_malformed(raw: str) -> None:
    assert parse_structured_output(raw).parse_status.status == "malformed"
