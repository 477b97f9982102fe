"""The scenario catalogue: derived from the spec files, so a new scenario shows up as uncovered."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.corpus.catalogue import DEFAULT_SPEC_DIR, load_catalogue, parse_spec_text, slug
from harness.corpus.loader import CorpusError, load_cases
from harness.corpus.stats import corpus_stats
from tests.corpus.helpers import example, write

# INTERPRETATION.md §1, copied verbatim: the 22 normative scenario ids.
NORMATIVE_IDS = """
chat-verifier-agent/verifier-shall-fact-check-executor-answers/pass-verdict-when-all-claims-have-evidence
chat-verifier-agent/verifier-shall-fact-check-executor-answers/low-confid-verdict-with-partial-evidence
chat-verifier-agent/verifier-shall-fact-check-executor-answers/low-confid-verdict-with-only-inference-support
chat-verifier-agent/verifier-shall-fact-check-executor-answers/reject-verdict-when-claims-contradict-evidence
chat-verifier-agent/verifier-shall-fact-check-executor-answers/structured-executor-claims-are-verified-first
chat-verifier-agent/verifier-shall-fact-check-executor-answers/malformed-structured-output-cannot-pass-through-natural-language-fallback
chat-verifier-agent/verifier-shall-output-structured-json/claim-level-verifier-output-is-accepted
chat-verifier-agent/facts-checked-shall-use-a-fixed-classification-set/claim-checks-are-mapped-to-legacy-facts
chat-verifier-agent/verifier-shall-be-observable/claim-checks-written-to-self-evaluation
chat-verifier-agent/verifier-shall-be-observable/gatekeeper-result-written-to-self-evaluation
chat-verifier-agent/verifier-shall-consume-explicit-verification-inputs/structured-claims-are-the-primary-verification-target
chat-verifier-agent/verifier-shall-consume-explicit-verification-inputs/malformed-structured-output-cannot-pass-through-natural-language-fallback
chat-verifier-agent/verifier-shall-consume-explicit-verification-inputs/gatekeeper-result-available-to-verifier
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/gatekeeper-fail-prevents-pass
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/invocation-reference-failure-downgrades-to-reject
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/schema-rule-rejects-removed-fields
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/schema-rule-rejects-missing-evidence-bindings
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/invocation-rule-rejects-fabricated-invocation-ids
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/invocation-rule-rejects-tool-name-mismatch
chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/valid-structured-output-passes-initial-gatekeeper-rules
chat-verifier-agent/verifier-claim-checks-shall-use-a-fixed-derivability-classification-set/claim-check-verification-values-are-constrained
chat-verifier-agent/verifier-claim-checks-shall-use-a-fixed-derivability-classification-set/claim-check-evidence-references-remain-auditable
""".split()

CANONICAL = """\
## MODIFIED Requirements

### Requirement: Verifier SHALL cite sources
The Verifier SHALL name the trace entries it used.

#### Scenario: Every check names a trace_ref
- **WHEN** the Verifier emits claim_checks
- **THEN** each check SHALL name at least one trace_ref
- **AND** the trace_ref SHALL exist

#### Scenario: Unknown refs are dropped (v2)
- **WHEN** a check names an unknown trace_ref
- **THEN** the ref SHALL be dropped
"""

NEW_SCENARIO = """
Scenario: verdict names the model
• WHEN the Verifier evaluation is persisted
• THEN the verifier model SHALL be recorded
"""


def test_the_repo_catalogue_has_the_22_normative_ids() -> None:
    catalogue = load_catalogue()
    assert len(NORMATIVE_IDS) == 22
    assert sorted(catalogue) == sorted(NORMATIVE_IDS)


def test_scenarios_keep_their_steps_and_source() -> None:
    scenario = load_catalogue()[NORMATIVE_IDS[13]]
    assert scenario.title == "gatekeeper fail prevents PASS"
    assert [s.keyword for s in scenario.steps] == ["WHEN", "AND", "THEN", "AND"]
    assert scenario.change == "2026-07-07-executor-verifier-claim-checks"


def test_slug_rule() -> None:
    assert slug("Malformed structured output cannot pass through natural language fallback") == (
        "malformed-structured-output-cannot-pass-through-natural-language-fallback"
    )
    assert slug("  PASS verdict -- when (all) claims_have evidence! ") == "pass-verdict-when-all-claims-have-evidence"


def test_canonical_openspec_markdown_parses() -> None:
    scenarios = parse_spec_text(CANONICAL, "cap", "change-x", "x/spec.md")
    assert [s.id for s in scenarios] == [
        "cap/verifier-shall-cite-sources/every-check-names-a-trace-ref",
        "cap/verifier-shall-cite-sources/unknown-refs-are-dropped-v2",
    ]
    assert [(s.keyword, s.text) for s in scenarios[0].steps] == [
        ("WHEN", "the Verifier emits claim_checks"),
        ("THEN", "each check SHALL name at least one trace_ref"),
        ("AND", "the trace_ref SHALL exist"),
    ]
    assert scenarios[0].section == "MODIFIED"
    assert scenarios[0].requirement_text == "The Verifier SHALL name the trace entries it used."


def test_a_canonical_spec_file_on_disk_joins_the_catalogue(tmp_path: Path) -> None:
    spec = tmp_path / "changes" / "2026-08-01-cite" / "specs" / "chat-verifier-agent" / "spec.md"
    spec.parent.mkdir(parents=True)
    spec.write_text(CANONICAL, encoding="utf-8")
    assert list(load_catalogue(tmp_path)) == [
        "chat-verifier-agent/verifier-shall-cite-sources/every-check-names-a-trace-ref",
        "chat-verifier-agent/verifier-shall-cite-sources/unknown-refs-are-dropped-v2",
    ]


def test_a_new_scenario_in_a_spec_file_shows_up_as_uncovered(tmp_path: Path) -> None:
    spec_dir = tmp_path / "spec"
    shutil.copytree(DEFAULT_SPEC_DIR, spec_dir)
    target = next(p for p in sorted(spec_dir.rglob("spec.md")) if "claim-checks" in str(p))
    text = target.read_text(encoding="utf-8")
    anchor = "Scenario: claim checks written to self_evaluation"
    assert anchor in text
    target.write_text(text.replace(anchor, NEW_SCENARIO.strip() + "\n" + anchor, 1), encoding="utf-8")
    catalogue = load_catalogue(spec_dir)
    new_id = "chat-verifier-agent/verifier-shall-be-observable/verdict-names-the-model"
    assert new_id in catalogue and len(catalogue) == 23

    cases_dir = tmp_path / "cases"
    write(cases_dir, example("quality"))
    stats = corpus_stats(load_cases([cases_dir], catalogue), catalogue)
    assert new_id in stats.uncovered
    coverage = next(t for t in stats.targets if t.name == "scenario-coverage")
    assert any(s.startswith(new_id) for s in coverage.shortfalls)

    data = example("quality")
    data["spec"] = [new_id]
    write(cases_dir, data)
    try:
        load_cases([cases_dir])  # the repo catalogue does not know the new id
    except CorpusError as exc:
        assert exc.errors[0].key_path == "spec[0]"
    else:
        raise AssertionError("an unknown scenario id loaded")
    stats = corpus_stats(load_cases([cases_dir], catalogue), catalogue)
    assert new_id not in stats.uncovered
