"""`vbench cases validate` and `check` keep working beside the new subcommands."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.corpus.helpers import example, quality, write


def test_validate_counts_and_fails_on_a_broken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, example("quality"))
    write(tmp_path, example("policy"))
    assert main(["cases", "validate", str(tmp_path)]) == 0
    assert "2 cases valid (1 policy, 1 quality)" in capsys.readouterr().out
    bad = write(tmp_path, quality("bad", expected__claims={"C1": "seen"}))
    assert main(["cases", "validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: expected.claims.C1:" in err.replace("\n", "")


def test_check_passes_consistent_cases_and_flags_a_wrong_expectation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, example("quality"))
    write(tmp_path, example("policy"))
    assert main(["cases", "check", str(tmp_path)]) == 0
    wrong = quality("wrong-gatekeeper")
    wrong["expected"]["gatekeeper"] = {"status": "fail", "failed_rules": ["schema.executor_v2"]}
    wrong["expected"]["verdict"] = "LOW_CONFID"
    write(tmp_path, wrong)
    assert main(["cases", "check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL wrong-gatekeeper" in out and "gatekeeper.status: expected fail, got pass" in out
