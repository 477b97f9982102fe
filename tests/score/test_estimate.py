"""`vbench estimate` over an imported, partly labelled folder with the reference verifier as the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.score.estimate import JudgeAnswer, estimate, judge_reference
from tests.score.labelled_folder import import_folder, label


def _label_half(tmp_path: Path, right: bool = True) -> tuple[Path, list]:
    """Label half the sessions with the production verifier's own claim classes (so it is right on them)."""
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    for case in cases[::2]:
        for check in case.production.claim_checks:
            label(folder, "alice", case.id, check.claim_id, check.verification.value if right else "contradicted")
    return folder, cases


def test_estimate_json_and_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, cases = _label_half(tmp_path)
    assert main(["estimate", str(folder), "--judge", "reference", "--half-width", "0.05"]) == 0
    data = json.loads((folder / "estimate.json").read_text())
    assert data["sessions"] == len(cases)
    assert data["labelled"] == len(cases[::2])
    assert data["biased"] is False  # no order recorded: taken as random, not flagged
    rates = {r["name"]: r for r in data["rates"]}
    assert set(rates) == {"verdict_accuracy", "unsafe_pass_rate", "claim_accuracy"}
    claim = rates["claim_accuracy"]
    assert claim["ci"][0] <= claim["estimate"] <= claim["ci"][1] <= 1.0
    assert claim["human_estimate"] == pytest.approx(1.0)  # production labelled right on every labelled claim
    assert "## Production verifier on all imported sessions" in (folder / "estimate.md").read_text()
    assert "verdict_accuracy" in capsys.readouterr().out


def test_the_judge_is_not_trusted_blindly(tmp_path: Path) -> None:
    """The same judge, labels saying the production verifier is always wrong: the estimate follows the labels."""
    folder, cases = _label_half(tmp_path, right=False)
    judge = judge_reference(cases)
    wrong = estimate(folder, judge, "reference")
    claim = {r.name: r for r in wrong.rates}["claim_accuracy"]
    assert claim.ci[0] < 0.3 and claim.human_estimate < 0.1  # some production checks said contradicted


def test_a_judge_without_every_session_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, cases = _label_half(tmp_path)
    with pytest.raises(ValueError, match="no answer for 1 session"):
        estimate(folder, {c.id: JudgeAnswer(verdict=None) for c in cases[1:]}, "partial")
    assert main(["estimate", str(folder), "--judge", str(tmp_path / "no-run")]) == 2
    assert "results.jsonl: no such file" in capsys.readouterr().err


def test_a_half_width_beyond_the_sessions_says_label_them_all(tmp_path: Path) -> None:
    folder, cases = _label_half(tmp_path)
    report = estimate(folder, judge_reference(cases), "reference", half_width=0.001)
    for r in report.rates:
        assert r.label_all and r.labels_still_needed == len(cases) - report.labelled


def test_strata_with_too_few_labels_fall_back_and_say_so(tmp_path: Path) -> None:
    folder, cases = _label_half(tmp_path)
    one_each = {c.id: c.id for c in cases}  # every session its own stratum: too few labels in each
    report = estimate(folder, judge_reference(cases), "reference", strata=one_each)
    assert any("not stratified" in n for n in report.notes)
    assert all(r.strata is None for r in report.rates)
    halves = {c.id: ("a" if i % 4 < 2 else "b") for i, c in enumerate(cases)}
    stratified = estimate(folder, judge_reference(cases), "reference", strata=halves)
    assert all(r.strata == ["a", "b"] for r in stratified.rates)
    plain = estimate(folder, judge_reference(cases), "reference")
    for s, p in zip(stratified.rates, plain.rates, strict=True):
        assert s.ci[0] <= s.estimate <= s.ci[1]
        assert s.human_estimate is not None and p.human_estimate is not None
