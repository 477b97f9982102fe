"""Corpus statistics: counts by kind, class, verdict, tag and scenario, and the issue-4 targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpus.catalogue import load_catalogue
from harness.corpus.schema import Case
from harness.corpus.stats import ADVERSARIAL_CATEGORIES, Targets, class_counts, corpus_stats, origin
from tests.corpus.helpers import case, example, quality, write

PASS_SCENARIO = (
    "chat-verifier-agent/verifier-shall-fact-check-executor-answers/pass-verdict-when-all-claims-have-evidence"
)
FABRICATED = (
    "chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/"
    "invocation-rule-rejects-fabricated-invocation-ids"
)


def corpus() -> list[Case]:
    """Four quality cases, one policy case, one generated and one external case."""
    q1 = quality("q1", tags=["incident-cache", "adv-number"])
    q2 = quality("q2", tags=["incident-cache", "adv-entity"], expected__verdict=["LOW_CONFID", "REJECT"])
    q2["expected"]["claims"] = {"C1": "contradicted", "C2": ["overstated", "unsupported"], "C3": "direct_observation"}
    q3 = quality("q3", tags=["incident-dns"], expected__verdict="LOW_CONFID")
    q3["expected"]["claims"] = {"C1": "external_unknown"}
    q4 = quality("q4", tags=["incident-disk"])
    q4["executor"]["structured_output"] = None  # no claims: not counted in claims per case
    q4["expected"].update({"parse_status": "missing", "verdict": "LOW_CONFID", "claims": None})
    gen = quality("gen-x", tags=["generated", "mut-drop-output", "adv-number"], expected__verdict="REJECT")
    ext = quality("ext-x", tags=["external"], expected__verdict="REJECT")
    return [case(d) for d in (q1, q2, q3, q4, example("policy"), gen, ext)]


def test_origin_by_tag() -> None:
    assert [origin(c) for c in corpus()][-3:] == ["hand-written", "generated", "external"]


def test_class_counts_weight_a_list_of_k_labels_by_one_over_k() -> None:
    counts = {c.key: c for c in class_counts(["a", ["a", "b"], "b", ["b", "c"]], ["a", "b", "c", "d"])}
    assert (counts["a"].sole, counts["a"].any_of, counts["a"].weighted) == (1, 2, 1.5)
    assert (counts["b"].sole, counts["b"].any_of, counts["b"].weighted) == (1, 3, 2.0)
    assert counts["c"].weighted == 0.5 and counts["c"].share == 0.125
    assert counts["d"].any_of == 0


def test_counts_of_hand_written_cases() -> None:
    stats = corpus_stats(corpus(), load_catalogue())
    assert (stats.total, stats.by_kind.policy, stats.by_kind.quality) == (7, 1, 4)
    assert {o.key: (o.policy, o.quality) for o in stats.by_origin} == {
        "hand-written": (1, 4),
        "generated": (0, 1),
        "external": (0, 1),
    }
    labels = {c.key: c for c in stats.labels}
    # q1: direct, direct, inference; q2: contradicted, overstated|unsupported, direct; q3: external
    assert labels["direct_observation"].sole == 3
    assert labels["overstated"].any_of == 1 and labels["overstated"].sole == 0
    assert labels["unsupported"].weighted == 0.5
    assert labels["unsupported"].policy == 1  # the policy example labels C1 unsupported
    verdicts = {v.key: v for v in stats.verdicts}
    assert verdicts["PASS"].weighted == 1 and verdicts["PASS"].share == 0.25
    assert verdicts["REJECT"].weighted == 0.5 and verdicts["LOW_CONFID"].weighted == 2.5
    assert stats.claims_per_case == {3: 3}
    assert {k.key: k.quality for k in stats.incident_kinds} == {
        "incident-cache": 2,
        "incident-disk": 1,
        "incident-dns": 1,
    }
    adversarial = {a.key: a.total for a in stats.adversarial}
    assert list(adversarial) == list(ADVERSARIAL_CATEGORIES)
    assert adversarial["adv-number"] == 1  # the generated case's tag is not counted
    assert stats.unknown_adversarial_tags == []  # a typo like adv-numbr no longer loads (test_cli_cases)
    assert [m.key for m in stats.mutations] == ["mut-drop-output"]


def test_scenario_counts_and_uncovered() -> None:
    stats = corpus_stats(corpus(), load_catalogue())
    rows = {s.id: s for s in stats.scenarios}
    assert (rows[PASS_SCENARIO].quality, rows[PASS_SCENARIO].generated, rows[PASS_SCENARIO].external) == (4, 1, 1)
    assert rows[FABRICATED].policy == 1
    assert PASS_SCENARIO not in stats.uncovered and FABRICATED not in stats.uncovered
    assert len(stats.uncovered) == 22 - 3  # the policy example names two scenarios, the quality one one


def test_counting_generated_cases_on_request() -> None:
    stats = corpus_stats(corpus(), load_catalogue(), counted=("generated",))
    assert (stats.by_kind.policy, stats.by_kind.quality) == (0, 1)
    assert {a.key: a.total for a in stats.adversarial}["adv-number"] == 1
    assert {s.id: s.quality for s in stats.scenarios}[PASS_SCENARIO] == 1


def test_targets_report_what_falls_short() -> None:
    stats = corpus_stats(corpus(), load_catalogue())
    targets = {t.name: t for t in stats.targets}
    assert not stats.targets_met
    assert targets["quality-cases"].shortfalls == ["4 quality cases"]
    assert targets["incident-kinds"].shortfalls[0].startswith("3 incident kinds")
    assert "REJECT: 12.5% (0.5 of 4)" in targets["verdict-balance"].shortfalls
    assert targets["claims-per-case"].met
    assert len(targets["scenario-coverage"].shortfalls) == 22


def test_targets_met_when_the_numbers_are_low_enough() -> None:
    lenient = Targets(
        policy_per_scenario=0,
        quality_per_scenario=0,
        quality_cases=4,
        incident_kinds=3,
        labels_per_class=0,
        verdict_share=0.1,
        cases_per_adversarial_category=0,
    )
    stats = corpus_stats(corpus(), load_catalogue(), lenient)
    assert stats.targets_met, [t for t in stats.targets if not t.met]
    strict = lenient.model_copy(update={"max_claims": 2})
    stats = corpus_stats(corpus(), load_catalogue(), strict)
    assert [t.name for t in stats.targets if not t.met] == ["claims-per-case"]


def test_cli_stats_json_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, example("quality"))
    write(tmp_path, example("policy"))
    assert main(["cases", "stats", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["by_kind"] == {"key": "all", "policy": 1, "quality": 1}
    assert {t["name"]: t["met"] for t in data["targets"]}["quality-cases"] is False
    assert main(["cases", "stats", str(tmp_path), "--require-targets"]) == 1
    out = capsys.readouterr().out
    assert "uncovered scenarios (19)" in out and "falls short" in out
    assert main(["cases", "stats", str(tmp_path / "nope")]) == 2
