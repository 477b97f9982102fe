"""The development / held-out split and the ablation command (issue 18)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.baselines.reference import SIGNALS
from harness.cli.ablation import COLUMNS, main
from harness.corpus.splits import split_of

ROOT = Path(__file__).resolve().parents[2]
QUALITY = sorted((ROOT / "cases" / "quality").rglob("*.yaml"))


def test_the_split_is_fixed_by_the_id_and_holds_out_about_a_third() -> None:
    ids = [p.stem for p in QUALITY]
    assert [split_of(i) for i in ids] == [split_of(i) for i in reversed(ids)][::-1]  # no state, no order
    held = sum(split_of(i) == "held-out" for i in ids)
    assert 0.2 * len(ids) < held < 0.4 * len(ids)
    # a new case never moves another: the split is a function of the id alone
    assert split_of("q-new-case") in ("development", "held-out")


def _pick(tmp_path: Path) -> Path:
    folder = tmp_path / "quality"
    folder.mkdir()
    picked = {"development": 0, "held-out": 0}
    for path in QUALITY:
        split = split_of(path.stem)
        if picked[split] < 2:
            shutil.copy(path, folder / path.name)
            picked[split] += 1
    return folder


def test_ablation_prints_the_full_baseline_and_each_signal_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    halueval = tmp_path / "halueval"
    halueval.mkdir()
    for path in sorted((ROOT / "cases" / "external" / "halueval-qa").glob("halueval-qa-000[12]-*.yaml")):
        shutil.copy(path, halueval / path.name)
    assert (
        main(["--quality", str(_pick(tmp_path)), "--halueval", str(halueval), "--json", str(tmp_path / "t.json")]) == 0
    )
    out = capsys.readouterr().out
    assert all(column in out.splitlines()[0] for column in COLUMNS)
    rows = [line.split("|")[1].strip() for line in out.splitlines()[2:]]
    assert rows == ["full", *(f"-{s}" for s in SIGNALS)]
    assert "-" not in out.splitlines()[2].split("|")[-2]  # HaluEval BAcc is filled


def test_ablation_exits_2_when_a_split_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "quality"
    folder.mkdir()
    one = next(p for p in QUALITY if split_of(p.stem) == "development")
    shutil.copy(one, folder / one.name)
    assert main(["--quality", str(folder), "--halueval", str(tmp_path / "none")]) == 2
    assert "both splits" in capsys.readouterr().err


@pytest.mark.slow
def test_the_committed_ablation_table_reproduces() -> None:
    """reports/baselines/README.md keeps the table `nox -s ablation` prints; a baseline change must refresh it."""
    from harness.cli.ablation import HALUEVAL, QUALITY, ablation, render
    from harness.corpus.loader import load_cases

    readme = (ROOT / "reports" / "baselines" / "README.md").read_text(encoding="utf-8")
    committed = [line for line in readme.splitlines() if line.startswith(("| full ", "| -"))]
    quality = [c for c in load_cases([ROOT / QUALITY]) if c.kind == "quality"]
    table = render(ablation(quality, load_cases([ROOT / HALUEVAL])))
    assert table.splitlines()[2:] == committed


def test_the_committed_baseline_run_and_table_name_the_current_version() -> None:
    """A behaviour change refreshes the table and the baseline run; both must then name the bumped VERSION."""
    import json

    from harness.baselines.reference import VERSION, ReferenceSettings

    manifest = json.loads((ROOT / "reports" / "baselines" / "reference" / "manifest.json").read_text(encoding="utf-8"))
    described = manifest["verifiers"]["reference"]
    assert described["version"] == VERSION
    assert described["signals"] == list(ReferenceSettings().signals)
    readme = (ROOT / "reports" / "baselines" / "README.md").read_text(encoding="utf-8")
    assert f"## The reference verifier {VERSION}" in readme
