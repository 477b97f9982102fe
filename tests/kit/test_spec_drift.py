"""A spec that moves: `--spec DIR` reads a repository's OpenSpec tree, lists new scenarios without cases, names
changed scenarios and stale requirement quotes with the cases and requirement ids they affect."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpus.catalogue import DEFAULT_SPEC_DIR
from harness.corpus.loader import load_cases
from harness.kit.spec_drift import SpecDirError, resolve_spec_dir, spec_drift
from tests.kit.helpers import ROOT

POLICY = ROOT / "cases" / "policy"
CASES = ROOT / "cases"
HOOK = "changes/archive/2026-07-07-executor-gatekeeper-hook/specs/chat-verifier-agent/spec.md"
NEW_CHANGE = """## ADDED Requirements

### Requirement: Verifier SHALL record retries

The Verifier SHALL record how many times it called the model.

#### Scenario: Retry count written to self_evaluation

- **WHEN** the model call is retried
- **THEN** verifier_evaluation SHALL include the retry count
"""
NEW_ID = "chat-verifier-agent/verifier-shall-record-retries/retry-count-written-to-self-evaluation"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A team's repository holding a copy of the package's OpenSpec tree."""
    shutil.copytree(DEFAULT_SPEC_DIR / "openspec", tmp_path / "repo" / "openspec")
    return tmp_path / "repo"


def add_change(repo: Path) -> None:
    target = repo / "openspec" / "changes" / "add-retry-count" / "specs" / "chat-verifier-agent" / "spec.md"
    target.parent.mkdir(parents=True)
    target.write_text(NEW_CHANGE, encoding="utf-8")


def reword(repo: Path, old: str, new: str) -> None:
    path = repo / "openspec" / HOOK
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_the_packages_own_tree_has_no_drift() -> None:
    drift = spec_drift(resolve_spec_dir(DEFAULT_SPEC_DIR), load_cases([POLICY]))
    assert drift.clean and drift.added == drift.removed == [] and drift.stale == []


def test_an_added_scenario_without_cases_fails_require_targets_and_is_named(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cases", "stats", str(CASES), "--spec", str(repo), "--require-targets"]) == 0
    add_change(repo)
    capsys.readouterr()
    assert main(["cases", "stats", str(CASES), "--spec", str(repo), "--require-targets"]) == 1
    out = capsys.readouterr().out
    assert NEW_ID in out and "no case cites it" in out
    assert main(["cases", "stats", str(CASES), "--spec", str(repo)]) == 0  # listed, but not a gate unless asked
    capsys.readouterr()
    main(["cases", "stats", str(CASES), "--spec", str(repo / "openspec"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["spec_drift"]["uncovered"] == [NEW_ID] and NEW_ID in data["uncovered"]


def test_a_changed_requirement_text_is_stale_with_its_cases_and_ids(repo: Path) -> None:
    reword(repo, "THEN the payload SHALL include gatekeeper_result", "THEN the prompt SHALL include gatekeeper_result")
    drift = spec_drift(resolve_spec_dir(repo), load_cases([POLICY]))
    assert [s.id for s in drift.stale] == ["input.gatekeeper"]
    assert "the prompt SHALL include" in (drift.stale[0].now or "")
    changed = {c.id: c for c in drift.changed}
    sid = "chat-verifier-agent/verifier-shall-consume-explicit-verification-inputs/gatekeeper-result-available-to-verifier"
    assert sid in changed and changed[sid].cases and "input.gatekeeper" in changed[sid].requirements
    assert not drift.clean


def test_a_newer_change_rewriting_a_requirement_makes_its_quote_stale(repo: Path) -> None:
    """The archive still holds the old words; a later change MODIFIES the requirement without them."""
    target = repo / "openspec" / "changes" / "reword-inputs" / "specs" / "chat-verifier-agent" / "spec.md"
    target.parent.mkdir(parents=True)
    target.write_text(
        "## MODIFIED Requirements\n\n### Requirement: Verifier SHALL consume explicit verification inputs\n\n"
        "The Verifier SHALL receive its inputs as one JSON document.\n",
        encoding="utf-8",
    )
    drift = spec_drift(resolve_spec_dir(repo), load_cases([POLICY]))
    assert "input.gatekeeper" in [s.id for s in drift.stale]


def test_a_folder_without_a_spec_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SpecDirError, match=r"no spec\.md"):
        resolve_spec_dir(tmp_path)
    assert main(["cases", "stats", str(CASES), "--spec", str(tmp_path)]) == 2
    assert "no spec.md under it" in capsys.readouterr().err
