"""The manifest's settings are typed per component: old manifests read and keep their bytes, a malformed setting
is refused naming the file and its key path, keys this version does not know are kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.run.folder import RunFileError, read_manifest, write_manifest
from harness.run.gates import Gates, GateSettings
from harness.run.settings import ExecutorSettings

ROOT = Path(__file__).resolve().parents[2]
OLD = [ROOT / "reports" / "baselines" / "reference", Path(__file__).parent / "data" / "v1-run"]


@pytest.mark.parametrize("folder", OLD, ids=["reference-baseline", "v1-run"])
def test_an_old_manifest_reads_typed_and_writes_its_settings_back_unchanged(folder: Path, tmp_path: Path) -> None:
    manifest = read_manifest(folder)
    assert isinstance(manifest.settings.gates, Gates) and manifest.settings.gates.margin == 5.0
    assert "shard" not in manifest.settings and manifest.settings.get("shard") is None  # never set: not written
    write_manifest(tmp_path, manifest)
    before = json.loads((folder / "manifest.json").read_text())["settings"]
    after = json.loads((tmp_path / "manifest.json").read_text())["settings"]
    assert after == before and list(after) == list(before)


def test_the_gate_settings_a_run_recorded_are_the_ones_scoring_gets_back(tmp_path: Path) -> None:
    shutil.copytree(OLD[1], tmp_path / "run")
    path = tmp_path / "run" / "manifest.json"
    data = json.loads(path.read_text())
    data["settings"]["gates"] |= {"margin": 2.5, "fail_under": {"verdict_accuracy": 0.7}}
    data["settings"] |= {"control": "a", "baseline": "/somewhere/base"}
    path.write_text(json.dumps(data))
    settings = GateSettings.from_manifest_settings(read_manifest(tmp_path / "run").settings)
    assert settings.gates.margin == 2.5 and settings.gates.margin_fraction == pytest.approx(0.025)
    assert settings.gates.fail_under == {"verdict_accuracy": 0.7}
    assert settings.control == "a" and settings.baseline == Path("/somewhere/base")


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("gates", {"margin": "wide"}, "settings.gates.margin"),
        ("gates", {"margni": 2.0}, "settings.gates.margni"),
        ("perturb", "claim-order", "settings.perturb"),
        ("executor", ["local"], "settings.executor"),
        ("replay", "sometimes", "settings.replay"),
    ],
)
def test_a_malformed_setting_is_refused_naming_the_file_and_key_path(
    tmp_path: Path, key: str, value: object, named: str
) -> None:
    shutil.copytree(OLD[1], tmp_path / "run")
    path = tmp_path / "run" / "manifest.json"
    data = json.loads(path.read_text())
    data["settings"][key] = value
    path.write_text(json.dumps(data))
    with pytest.raises(RunFileError, match=f"{path}: {named.replace('.', chr(92) + '.')}"):
        read_manifest(tmp_path / "run")


def test_a_setting_this_version_does_not_know_is_kept(tmp_path: Path) -> None:
    shutil.copytree(OLD[1], tmp_path / "run")
    path = tmp_path / "run" / "manifest.json"
    data = json.loads(path.read_text())
    data["settings"]["scheduler"] = {"kind": "fair", "weights": [1, 2]}
    path.write_text(json.dumps(data))
    manifest = read_manifest(tmp_path / "run")
    assert manifest.settings["scheduler"] == {"kind": "fair", "weights": [1, 2]}
    write_manifest(tmp_path, manifest)
    assert json.loads((tmp_path / "manifest.json").read_text())["settings"] == data["settings"]


def test_a_setting_recorded_during_the_run_is_checked_against_its_type() -> None:
    manifest = read_manifest(OLD[1])
    manifest.settings["executor"] = {"name": "ray", "address": "127.0.0.1:6379"}
    executor = manifest.settings.executor
    assert isinstance(executor, ExecutorSettings) and executor.name == "ray"
    assert executor.model_dump() == {"name": "ray", "address": "127.0.0.1:6379"}  # the cluster's keys kept
    with pytest.raises(ValueError, match=r"executor\.name"):
        manifest.settings["executor"] = {"address": "127.0.0.1:6379"}
    with pytest.raises(ValueError, match="perturb_seed"):
        manifest.settings["perturb_seed"] = "soon"
