"""A record of a finished run: git identity of the working directory, figures through the summary model, and the
unit outcomes of outcomes.jsonl."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.history.record import HistoryError, git_identity, record_run_folder
from harness.score.outcomes import load_outcomes
from harness.score.summary_model import read_summary_file
from tests.history.conftest import chain_store  # noqa: F401 - the shared recorded chain


def test_git_identity_of_the_working_directory(work_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert git_identity() == ("main", head)
    subprocess.run(["git", "checkout", "-q", "--detach"], check=True)
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    monkeypatch.setenv("GITHUB_REF_NAME", "42/merge")
    assert git_identity() == ("42/merge", head)


def test_outside_a_repository_nothing_is_invented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_identity(tmp_path) == (None, None)


def test_a_record_holds_the_summary_figures_and_every_unit(
    chain_store: tuple[Path, list[Path]],  # noqa: F811
) -> None:
    run = chain_store[1][1]
    record = record_run_folder(run, branch="b", commit="c")
    summary = read_summary_file(run)
    (variant,) = summary.variants
    (head,) = record.head.variants
    assert record.head.run_id == summary.run.run_id and record.head.corpus_hash == summary.run.corpus_hash
    assert head.figures["verdict_accuracy"].value == variant.figure("verdict_accuracy")
    assert head.figures["verdict_accuracy"].ci == variant.figure("verdict_accuracy_ci")
    assert (head.units, head.verdict_correct, head.prompt_hash) == (21, 20, variant.prompt_hash)
    assert head.tokens == variant.tokens and record.head.code_fingerprint and record.head.policy
    assert record.unit_frame().equals(load_outcomes(run))
    assert record.manifest_model().run_id == summary.run.run_id


def test_a_folder_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="not a run folder"):
        record_run_folder(tmp_path)
