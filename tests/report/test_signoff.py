"""The conformance sign-off: a row per spec scenario, pass/fail per column, and exactly what was certified."""

from __future__ import annotations

from harness.corpus.catalogue import load_catalogue
from harness.report.signoff import certification, columns_for, result_rows, scenario_rows
from harness.run.log import Manifest, VariantInfo
from harness.score.summary_model import Summary
from tests.report.builders import SPEC_MALFORMED, SPEC_PASS, SPEC_REJECT, outcome, record

UNKNOWN = "chat-verifier-agent/not-in-the-spec/made-up"


def manifest(**extra: object) -> Manifest:
    return Manifest(
        run_id="r1", created="2026-01-01T00:00:00+00:00", package_version="9.9", git_sha=extra.pop("git_sha", "abc"),
        corpus_hash="cafe", case_dirs=["cases"], case_count=5, policy_cases=2, quality_cases=3, epochs=2,
        concurrency=1, excerpt_chars=2000,
        variants=[
            VariantInfo(name="m@p", model="openai:m", prompt="p", prompt_version="1", prompt_hash="sha256:00"),
            VariantInfo(name="reference", model="reference", prompt=None, claim_guard=False),
        ],
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def scenario_fixture() -> tuple[list, dict]:
    records = [
        outcome(r) for r in [
        record("pol-ok", "policy", 0, kind="policy", spec=[SPEC_PASS]),
        record("pol-bad", "policy", 0, kind="policy", spec=[SPEC_REJECT]),
        record("q1", "m@p", 1, spec=[SPEC_PASS]), record("q1", "m@p", 2, spec=[SPEC_PASS]),
        record("q1", "reference", 1, spec=[SPEC_PASS]), record("q1", "reference", 2, spec=[SPEC_PASS]),
        record("q2", "m@p", 1, spec=[SPEC_MALFORMED, UNKNOWN]), record("q2", "m@p", 2, spec=[SPEC_MALFORMED, UNKNOWN]),
        record("q2", "reference", 1, spec=[SPEC_MALFORMED, UNKNOWN]),
        record("q2", "reference", 2, spec=[SPEC_MALFORMED, UNKNOWN]),
    ]]  # fmt: skip
    failures = {("pol-bad", "policy", 0): {}, ("q2", "reference", 2): {}}  # one epoch failing fails the case
    return records, failures


def test_rows_cover_every_catalogue_scenario_and_each_column_counts_cases() -> None:
    records, failures = scenario_fixture()
    catalogue = load_catalogue()
    cols = columns_for("r1", manifest(), "policy", {})
    rows = scenario_rows(catalogue, result_rows("r1", records, failures), cols)
    by_id = {r["id"]: r for r in rows}
    assert list(by_id)[: len(catalogue)] == list(catalogue)  # spec order, every scenario
    assert [c.label for c in cols] == ["policy cases", "m@p", "reference"]

    passing = by_id[SPEC_PASS]
    assert passing["status"] == "certified" and passing["policy_cases"] == ["pol-ok"] and passing["quality_cases"] == 1
    assert [(c["cases"], c["passed"], c["status"]) for c in passing["cells"]] == [
        (1, 1, "pass"),
        (1, 1, "pass"),
        (1, 1, "pass"),
    ]
    assert by_id[SPEC_REJECT]["status"] == "fail"
    assert by_id[SPEC_REJECT]["cells"][0]["failed"] == ["pol-bad"]
    malformed = by_id[SPEC_MALFORMED]
    assert malformed["status"] == "fail"  # q2 failed in one epoch for the reference variant
    assert [c["status"] for c in malformed["cells"]] == ["none", "pass", "fail"]
    unknown = by_id[UNKNOWN]
    assert unknown["known"] is False and unknown["requirement"] == "(not in the spec catalogue)"
    assert sum(1 for r in rows if r["status"] == "uncovered") == len(catalogue) - 3


def test_quality_only_scenarios_are_certified_for_their_deterministic_parts_only() -> None:
    records = [outcome(record("q1", "m@p", 1, spec=[SPEC_MALFORMED]))]
    rows = scenario_rows(load_catalogue(), result_rows("r1", records, {}), columns_for("r1", manifest(), "policy", {}))
    assert {r["id"]: r["status"] for r in rows}[SPEC_MALFORMED] == "deterministic-only"


def test_certification_names_what_was_certified_and_what_not() -> None:
    records, failures = scenario_fixture()
    m = manifest(git_sha="abc123-dirty", filters=["tag:x"])
    cols = columns_for("r1", m, "policy", {})
    rows = scenario_rows(load_catalogue(), result_rows("r1", records, failures), cols)
    summary = {
        "conformance": {
            "passed": False, "policy_cases": 2, "policy_passed": 1, "invariant_violations": 0,
            "quality_expectation_mismatches": 1, "uncovered_scenarios": [SPEC_MALFORMED],
            "failures": [{"case_id": "pol-bad", "kind": "policy", "variant": "policy", "epoch": 0, "mismatches": ["verdict"], "invariant_violations": []}],
        },
        "variants": [{"name": "m@p", "errors": 3}, {"name": "reference", "errors": 0}],
    }  # fmt: skip
    cert = certification("r1", m, Summary.model_validate({"run": {"run_id": "r1"}, **summary}), rows, cols, {})
    assert cert["passed"] is False
    assert (cert["implementation"], cert["git_sha"], cert["corpus_hash"]) == (
        "verifier-bench 9.9",
        "abc123-dirty",
        "cafe",
    )
    assert cert["variants"][0] == {
        "name": "m@p", "model": "openai:m", "prompt": "p", "prompt_version": "1", "prompt_hash": "sha256:00", "claim_guard": True,
    }  # fmt: skip
    assert cert["certified"] == [SPEC_PASS]
    assert set(cert["failing"]) == {SPEC_REJECT, SPEC_MALFORMED, UNKNOWN}
    assert len(cert["uncovered"]) == len(load_catalogue()) - 3
    caveats = " ".join(cert["caveats"])
    assert "uncommitted changes" in caveats and "not commit abc123 alone" in caveats
    assert "filtered (tag:x)" in caveats
    assert "reference ran with the claim guard off" in caveats
    assert "3 quality case(s) ended in a transport or harness error" in caveats
    assert cert["failures"][0]["case_id"] == "pol-bad"


def test_unknown_git_sha_is_a_caveat() -> None:
    m = manifest(git_sha=None)
    summary = Summary.model_validate({"run": {"run_id": "r1"}, "conformance": {"passed": True, "failures": []}})
    cert = certification("r1", m, summary, [], columns_for("r1", m, "policy", {}), {})
    assert any("cannot be tied to a commit" in c for c in cert["caveats"])
    # conformance "passed" over zero policy cases certifies nothing
    assert cert["passed"] is False
    assert cert["caveats"][0] == "No policy case ran, so nothing about the implementation is certified."
