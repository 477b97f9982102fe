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
    assert "gatekeeper.status: expected fail, got pass" in out
    assert f"FAIL {tmp_path / 'wrong-gatekeeper.yaml'}" in out.replace("\n", "")  # the file, not only the id


def test_check_shows_the_gatekeepers_own_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = quality("critical-typo")
    data["executor"]["structured_output"]["claims"][0]["critical"] = "yes please"
    write(tmp_path, data)
    assert main(["cases", "check", str(tmp_path)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "the gatekeeper says: schema.executor_v2: critical is missing or not a boolean (at claims[0].critical)" in out
    )


def _validate_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict) -> str:
    path = write(tmp_path, data)
    assert main(["cases", "validate", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(path) in err
    return err


def test_three_labels_for_one_claim_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = quality("three", expected__claims={"C1": ["direct_observation", "reasonable_inference", "overstated"]})
    assert "expected.claims.C1: at most 2 labels per claim, got 3" in _validate_error(tmp_path, capsys, data)


def test_an_unknown_adversarial_tag_is_an_error_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _validate_error(tmp_path, capsys, quality("typo-tag", tags=["quality", "adv-numbr"]))
    assert "tags: unknown adversarial tag 'adv-numbr' (did you mean 'adv-number'?)" in err


def test_did_you_mean_for_keys_labels_and_scenarios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = quality("typos", expected__claims={"C1": "contradictd"})
    data["expected"]["verdcit"] = data["expected"].pop("verdict")
    err = _validate_error(tmp_path / "a", capsys, data)
    assert "expected.claims.C1:" in err and "got 'contradictd' (did you mean 'contradicted'?)" in err
    assert "expected.verdcit: unknown key (did you mean 'verdict'?)" in err
    scenario = quality("typo-scenario")
    scenario["spec"] = [scenario["spec"][0][:-2]]
    err = _validate_error(tmp_path / "b", capsys, scenario)
    assert f"spec[0]: unknown scenario id {scenario['spec'][0]!r} (did you mean" in err


def test_the_readme_template_is_a_valid_case_that_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "cases" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Add a case", 1)[1]
    template = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert template is not None
    path = tmp_path / "quality" / "cache" / "q-cache-redis-timeouts-pass.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(template.group(1), encoding="utf-8")
    assert main(["cases", "validate", str(tmp_path)]) == 0
    assert main(["cases", "check", str(tmp_path)]) == 0
    assert "1 of 1 cases agree" in capsys.readouterr().out


def test_the_readme_links_to_spec_files_that_exist() -> None:
    import re

    cases = Path(__file__).resolve().parents[2] / "cases"
    links = re.findall(r"\]\(([^)#]+\.md)\)", (cases / "README.md").read_text(encoding="utf-8"))
    assert "spec/CASE_FORMAT.md" in links
    assert [link for link in links if not (cases / link).is_file()] == []
