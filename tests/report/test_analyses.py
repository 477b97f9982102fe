"""The report's analyses are pure functions: rows in, rows out, figures worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.report import analyses
from harness.report.prices import Price, PriceError, cost_of, load_prices
from harness.report.signoff import ResultRow, result_rows
from harness.score.frames import quality_frame
from harness.score.registry import metric
from harness.score.summary_model import Comparison
from tests.report.builders import as_dict, outcome, record


def test_headline_rows_mark_the_best_variant_per_metric_with_direction() -> None:
    variants = [
        {"name": "a", "verdict_accuracy": 0.8, "verdict_accuracy_ci": [0.7, 0.9], "unsafe_pass_rate": 0.30},
        {"name": "b", "verdict_accuracy": 0.6, "verdict_accuracy_ci": [0.5, 0.7], "unsafe_pass_rate": 0.10},
    ]
    rows = analyses.headline_rows(variants)
    keys = [m.key for m in analyses.shown_metrics()]
    va, up = keys.index("verdict_accuracy"), keys.index("unsafe_pass_rate")
    assert rows[0]["cells"][va] == {"value": 0.8, "ci": [0.7, 0.9], "best": True, "percent": True}
    assert rows[1]["cells"][va]["best"] is False
    # lower is better for unsafe PASS
    assert rows[1]["cells"][up]["best"] is True and rows[0]["cells"][up]["best"] is False
    # a figure only one variant has is never "best"
    assert not any(c["best"] for c in analyses.headline_rows(variants[:1])[0]["cells"])


def test_comparison_rows_read_the_holm_adjusted_p() -> None:
    rows = analyses.comparison_rows(
        [
            Comparison.model_validate(c)
            for c in (
                {"a": "x", "b": "y", "cases": 30, "verdict_accuracy_diff": 0.36, "mcnemar_p": 0.001, "p_adjusted": 0.002,
             "mcnemar_a_only": 12, "mcnemar_b_only": 1, "claim_accuracy_diff": -0.12, "claim_accuracy_diff_p": 0.004,
             "claim_accuracy_diff_p_adjusted": 0.008},
            {"a": "x", "b": "z", "cases": 30, "verdict_accuracy_diff": 0.1, "mcnemar_p": 0.04, "p_adjusted": 0.08,
             "mcnemar_a_only": 5, "mcnemar_b_only": 0, "claim_accuracy_diff": 0.05, "claim_accuracy_diff_p": 0.03,
             "claim_accuracy_diff_p_adjusted": 0.06, "mde": 0.2},
            )
        ]
    )  # fmt: skip
    assert (rows[0]["verdict_significant"], rows[0]["verdict_better"]) == (True, "x")
    assert (rows[0]["claim_significant"], rows[0]["claim_better"]) == (True, "y")  # A − B below 0: B better
    # raw p 0.04 would read as significant; adjusted over the family it is 0.08, and the reading follows it
    assert (rows[1]["verdict_significant"], rows[1]["verdict_better"]) == (False, None)
    assert rows[1]["claim_significant"] is False
    # rows from before comparisons were decisions: figures stated, at the adjusted p, nothing decided
    assert rows[1]["conclusion"].startswith("x vs z: +10.0 pp verdict accuracy (A − B) on 30 paired cases, p = 0.080")
    decided = analyses.comparison_rows(
        [Comparison.model_validate({**rows[1], "conclusion": "BLOCK z against x: verdict_accuracy: ..."})]
    )
    assert decided[0]["conclusion"] == "BLOCK z against x: verdict_accuracy: ..."  # the recorded decision, as is


def test_breakdown_table_aligns_groups_across_variants_and_gives_the_spread() -> None:
    variants = [
        {"name": "a", "per_tag": {"t1": {"verdict_accuracy": 1.0, "cases": 2}, "t2": {"verdict_accuracy": 0.5, "cases": 2}}},
        {"name": "b", "per_tag": {"t1": {"verdict_accuracy": 0.25, "cases": 4}}},
    ]  # fmt: skip
    table = analyses.breakdown_table(variants, "per_tag", {"t1": "Tag one"})
    assert table["variants"] == ["a", "b"]
    assert [(r["group"], r["title"]) for r in table["rows"]] == [("t1", "Tag one"), ("t2", "t2")]
    assert table["rows"][0]["spread"] == pytest.approx(0.75)
    assert table["rows"][1]["cells"][1] is None and table["rows"][1]["spread"] is None


def test_per_epoch_accuracy_over_scored_quality_results() -> None:
    records = [
        record("c1", "v", 1), record("c2", "v", 1, verdict="REJECT"),
        record("c1", "v", 2), record("c2", "v", 2),
        record("c3", "v", 2, error="timeout"),  # not scored: left out
        record("c1", "w", 1, kind="policy"),  # policy records are not quality results
    ]  # fmt: skip
    results = result_rows("r", [outcome(r) for r in records], set())
    assert analyses.per_epoch_accuracy(results) == {"v": [(1, 0.5, 2), (2, 1.0, 2)]}


def test_the_result_rows_score_as_the_scorers_quality_frame_does() -> None:
    records = [
        record("c1", "v", 1), record("c2", "v", 1, verdict="REJECT"), record("c3", "v", 1, verdict=None, error="x"),
        record("c4", "v", 2, verdict="LOW_CONFID", gold_verdict=["LOW_CONFID", "REJECT"]),
    ]  # fmt: skip
    ours = result_rows("r", [outcome(r) for r in records], set())
    theirs = quality_frame(records)
    assert [r.scored for r in ours] == theirs["scored"].tolist()
    assert [r.verdict_correct for r in ours] == theirs["verdict_correct"].tolist() == [True, False, False, True]


def test_quality_mismatches_say_what_differed() -> None:
    rec = as_dict(
        record(verdict="PASS", gold_verdict=["REJECT"], claims_got={"C1": "direct_observation"}, gold_claims={"C1": ["contradicted"], "C2": ["unsupported"]})
    )  # fmt: skip
    assert analyses.quality_mismatches(rec) == [
        'verdict: expected ["REJECT"], got PASS',
        'claims.C1: expected ["contradicted"], got direct_observation',
        'claims.C2: expected ["unsupported"], got null (no claim check)',
    ]
    assert analyses.quality_mismatches(as_dict(record(error="transport: timed out"))) == ["error: transport: timed out"]
    assert analyses.quality_mismatches(as_dict(record())) == []


def test_operations_rows_price_only_known_models() -> None:
    variants = [
        {"name": "a", "model": "openai:gpt-x", "tokens": {"prompt": 2_000_000, "completion": 500_000, "total": 2_500_000}, "quality_samples": 1000},
        {"name": "b", "model": "openai:other", "tokens": {"prompt": 10, "completion": 10, "total": 20}, "quality_samples": 2},
    ]  # fmt: skip
    rows = analyses.operations_rows(variants, {"gpt-x": Price(input=0.5, output=2.0)})
    assert rows[0]["cost"]["total"] == pytest.approx(2 * 0.5 + 0.5 * 2.0)
    assert rows[0]["tokens_per_result"] == 2500
    assert rows[1]["cost"] is None  # unknown price: tokens only


def test_grounding_rows_carry_the_published_figures_and_say_they_are_other_data() -> None:
    g = analyses.grounding_rows(
        [{"name": "a", "grounding_bacc": 0.7, "grounding_bacc_by_dataset": {"d1": {"grounding_bacc": 0.6, "grounding_bacc_ci": [0.5, 0.7], "claims": 9}}}]
    )  # fmt: skip
    assert g["datasets"] == ["d1"]
    assert g["rows"][0]["datasets"] == [{"value": 0.6, "ci": [0.5, 0.7], "claims": 9}]
    assert dict(g["published"]) == {"GPT-4": 75.3, "MiniCheck-FT5": 74.7, "GPT-3.5": 69.6}
    assert "other data" in g["source"]


def test_price_files_in_three_formats_and_errors_naming_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text('["openai:m"]\ninput = 1.0\noutput = 3.0\n')
    (tmp_path / "p.json").write_text('{"m": {"input": 1, "output": 3}}')
    (tmp_path / "p.yaml").write_text("m: {input: 1, output: 3}\n")
    for name in ("p.toml", "p.json", "p.yaml"):
        table = load_prices(tmp_path / name)
        assert cost_of("openai:m", {"prompt": 1_000_000, "completion": 1_000_000}, table)["total"] == pytest.approx(4.0)
    (tmp_path / "bad.yaml").write_text("m: {input: cheap, output: 3}\n")
    with pytest.raises(PriceError, match=r"bad\.yaml: m\.input"):
        load_prices(tmp_path / "bad.yaml")
    with pytest.raises(PriceError, match="cannot read"):
        load_prices(tmp_path / "missing.toml")


def test_no_price_table_means_no_cost(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VBENCH_PRICES", raising=False)
    assert load_prices(None) == {}
    (tmp_path / "env.yaml").write_text("m: {input: 1, output: 1}\n")
    monkeypatch.setenv("VBENCH_PRICES", str(tmp_path / "env.yaml"))
    assert set(load_prices(None)) == {"m"}


def test_confusion_table_colours_by_row_share_and_counts_the_diagonal() -> None:
    t = analyses.confusion_table("effective verdict", ["PASS", "REJECT"], [[3, 1], [0, 0]])
    assert t["n"] == 4 and t["right"] == 3
    assert [(c["n"], c["share"], c["diagonal"]) for c in t["rows"][0]["cells"]] == [(3, 0.75, True), (1, 0.25, False)]
    assert [c["share"] for c in t["rows"][1]["cells"]] == [0.0, 0.0]  # an empty gold row is not divided by zero
    assert analyses.confusion_table("x", ["PASS"], []) is None


def test_a_crowded_comparison_chart_shows_each_variant_against_the_best() -> None:
    names = [f"v{i}" for i in range(6)]
    variants = [{"name": n, "verdict_accuracy": 0.5 + 0.01 * i} for i, n in enumerate(names)]
    rows = [{"a": a, "b": b} for i, a in enumerate(names) for b in names[i + 1 :]]  # 15 pairs
    picked, note = analyses.chart_comparisons(rows, variants, limit=12)
    assert len(picked) == 5 and all("v5" in (r["a"], r["b"]) for r in picked)
    assert "against v5" in note and "all 15 pairs" in note
    assert analyses.chart_comparisons(rows[:3], variants) == (rows[:3], None)


def test_the_best_variant_of_a_crowded_chart_follows_the_lead_metric_and_its_direction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analyses, "lead_metric", lambda: metric("unsafe_pass_rate"))
    names = [f"v{i}" for i in range(6)]
    variants = [{"name": n, "unsafe_pass_rate": 0.5 - 0.01 * i} for i, n in enumerate(names)]
    rows = [{"a": a, "b": b} for i, a in enumerate(names) for b in names[i + 1 :]]
    picked, note = analyses.chart_comparisons(rows, variants, limit=12)
    assert all("v5" in (r["a"], r["b"]) for r in picked)  # lower is better: the lowest rate is the best
    assert note is not None and "against v5 (the best unsafe PASS rate)" in note
    assert [analyses.in_sentence(label) for label in ("Verdict accuracy", "PASS share")] == [
        "verdict accuracy",
        "PASS share",
    ]


def test_only_secrets_are_redacted_from_settings() -> None:
    from harness.report.context import public_settings

    shown = public_settings(
        {"max_tokens": 512, "api_key": "sk-x", "apiKey": "sk-y", "extra_body": {"access_token": "t", "top_k": 3},
         "api_key_env": "MY_KEY", "Authorization": "Bearer z", "timeout": 5, "refresh-token": "r"}
    )  # fmt: skip
    assert shown == {
        "max_tokens": 512, "api_key": "(redacted)", "apiKey": "(redacted)",
        "extra_body": {"access_token": "(redacted)", "top_k": 3}, "api_key_env": "MY_KEY",
        "Authorization": "(redacted)", "timeout": 5, "refresh-token": "(redacted)",
    }  # fmt: skip


def test_case_matrix_marks_right_wrong_flipped_and_puts_differences_first() -> None:
    rows = [
        # case, variant, epoch, scored, right
        ("c1", "a", 1, True, True), ("c1", "a", 2, True, True), ("c1", "b", 1, True, True), ("c1", "b", 2, True, True),
        ("c2", "a", 1, True, True), ("c2", "a", 2, True, False), ("c2", "b", 1, True, False), ("c2", "b", 2, True, False),
        ("c3", "a", 1, False, False), ("c3", "a", 2, True, True),
    ]  # fmt: skip
    frame = [ResultRow("r", c, v, e, "quality", (), True, scored, right) for c, v, e, scored, right in rows]
    frame.append(ResultRow("r", "c4", "a", 1, "policy", (), True, True, False))  # policy results are not in it
    m = analyses.case_matrix(frame, ["a", "b"])
    assert (m["total"], m["differing"]) == (3, 2)
    assert [(r["case_id"], r["cells"], r["differs"]) for r in m["rows"]] == [
        ("c2", ["flipped", "wrong"], True),
        ("c3", ["error", "none"], True),
        ("c1", ["right", "right"], False),
    ]
    assert len(analyses.case_matrix(frame, ["a", "b"], limit=1)["rows"]) == 1


def test_a_model_spec_is_priced_by_its_model_name_as_the_spec_grammar_reads_it() -> None:
    """price_for reads the spec with parse_model_spec, the one reader of the grammar (spaces included)."""
    from harness.report.prices import price_for

    gpt, ref = Price(input=1, output=2), Price(input=0, output=0)
    table = {"gpt-4o": gpt, "reference": ref}
    assert price_for("openai:gpt-4o", table) is gpt and price_for("openai: gpt-4o ", table) is gpt
    assert price_for("reference", table) is ref and price_for("openai:", table) is None
    assert price_for("openai:unknown", table) is None
