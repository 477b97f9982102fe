"""The one typed reading of the executor's claims (`parser.executor_output`): every item with its validity, the
policy's claims, and the one claim count every layer reports."""

from __future__ import annotations

import json

from harness.system.parser import executor_output, output_of, parse_structured_output

BINDING = {"trace_ref": "T1", "tool_name": "t", "source_invocation_ids": ["i1"]}
ITEMS = [
    {"claim_id": "C1", "statement": "first", "critical": True, "evidence_bindings": [BINDING, "not an object"]},
    "not an object",
    {"statement": "no id"},
    {"claim_id": 7, "statement": "an id that is not a string"},
    {"claim_id": "C1", "statement": "a repeat", "critical": False},
    {"claim_id": "C2", "evidence_bindings": {**BINDING, "source_invocation_ids": "i2"}},
]


def test_every_item_is_kept_with_its_validity() -> None:
    output = executor_output(parse_structured_output(json.dumps({"claims": ITEMS})))
    assert [(e.index, e.claim_id, e.first) for e in output.entries] == [
        (0, "C1", True),
        (1, None, False),
        (2, None, False),
        (3, None, False),
        (4, "C1", False),
        (5, "C2", True),
    ]
    assert [[(b.path, b.well_typed) for b in e.bindings] for e in output.entries] == [
        [("[0]", True)],  # the string in the list is no binding
        [],
        [],
        [],
        [],
        [("", False)],  # a single object instead of a list, with a bare id: a binding that never resolves
    ]


def test_the_claim_count_counts_every_object_with_a_string_id_repeats_included() -> None:
    output = executor_output(parse_structured_output(json.dumps({"claims": ITEMS})))
    assert output.claim_count == 3  # C1, its repeat, C2
    assert [c["statement"] for c in output.claim_objects if "statement" in c] == ["first", "a repeat"]
    assert len(output.objects) == 5  # every object, with or without a usable id


def test_the_policy_reads_the_first_item_of_each_id() -> None:
    output = executor_output(parse_structured_output(json.dumps({"claims": ITEMS})))
    assert [(c.claim_id, c.statement, c.critical) for c in output.claims] == [("C1", "first", True), ("C2", "", False)]
    (c2,) = [c for c in output.claims if c.claim_id == "C2"]
    assert [(b.source_invocation_ids, b.well_typed) for b in c2.evidence_bindings] == [(["i2"], False)]


def test_an_output_that_is_not_valid_has_no_claims_and_no_count() -> None:
    for raw in (None, "{not json", json.dumps({"claims": "a string"}), json.dumps([1])):
        output = executor_output(parse_structured_output(raw))
        assert not output.valid and output.entries == () and output.claims == []
        assert output.claim_count is None


def test_an_object_read_in_place_hands_out_its_own_items() -> None:
    """A generator or perturbation edits what it reads: the items are the body's, not copies."""
    body = {"claims": [{"claim_id": "C1", "evidence_bindings": [dict(BINDING)]}]}
    output = output_of(body)
    output.claim_objects[0]["claim_id"] = "K1"
    output.entries[0].bindings[0].raw["trace_ref"] = "T9"
    assert body["claims"][0]["claim_id"] == "K1"
    assert body["claims"][0]["evidence_bindings"][0]["trace_ref"] == "T9"
    assert output_of(None).valid is False
