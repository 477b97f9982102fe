"""`vbench label export`: agreed labels, both labels on a disagreement unless adjudicated, incomplete sessions
left out and listed, the gold verdict from the policy; the output validates and runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.corpus.sessions import Imported
from tests.score.labelled_folder import import_folder, label


def critical_case(cases: list[Imported]) -> Imported:
    return next(
        c
        for c in cases
        if c.prepared().gatekeeper.status == "pass" and sum(x.critical for x in c.prepared().claims) >= 1
    )


def test_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    target = critical_case(cases)
    claims = target.prepared().claims
    critical = next(c.claim_id for c in claims if c.critical)
    others = [c.claim_id for c in claims if c.claim_id != critical]
    for cid in others:
        label(folder, "ann1", target.id, cid, "direct_observation")
        label(folder, "ann2", target.id, cid, "direct_observation")
    label(folder, "ann1", target.id, critical, "direct_observation")
    label(folder, "ann2", target.id, critical, "contradicted")
    incomplete = next(c for c in cases if c.id != target.id and len(c.prepared().claims) >= 2)
    label(folder, "ann1", incomplete.id, incomplete.prepared().claims[0].claim_id, "unsupported")

    assert main(["label", "export", str(folder), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr()
    assert f"left out {incomplete.id}: claim {incomplete.prepared().claims[1].claim_id} is not labelled" in out.err
    written = yaml.safe_load((tmp_path / "out" / f"{target.id}.yaml").read_text())
    assert written["expected"]["claims"][critical] == ["direct_observation", "contradicted"]  # both, at most two
    assert all(written["expected"]["claims"][cid] == "direct_observation" for cid in others)
    assert written["expected"]["verdict"] == ["PASS", "REJECT"]  # what the two readings imply, through the policy
    assert "unlabelled" not in written["meta"]
    assert [p.stem for p in (tmp_path / "out").glob("*.yaml")] == [target.id]

    # adjudication settles the claim, and the verdict follows
    label(folder, "adjudicated", target.id, critical, "contradicted")
    assert main(["label", "export", str(folder), "--out", str(tmp_path / "out")]) == 0
    written = yaml.safe_load((tmp_path / "out" / f"{target.id}.yaml").read_text())
    assert written["expected"]["claims"][critical] == "contradicted"
    assert written["expected"]["verdict"] == "REJECT"
    capsys.readouterr()
    assert main(["cases", "validate", str(tmp_path / "out")]) == 0


def test_three_different_labels_need_adjudication(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    target = cases[0]
    for who, value in (("a", "direct_observation"), ("b", "overstated"), ("c", "contradicted")):
        for claim in target.prepared().claims:
            label(folder, who, target.id, claim.claim_id, value)
    assert main(["label", "export", str(folder), "--out", str(tmp_path / "out")]) == 2
    assert "has 3 different labels; settle it in labels/adjudicated.jsonl" in capsys.readouterr().err


def test_export_refuses_to_write_over_the_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import_folder(tmp_path)
    assert main(["label", "export", str(tmp_path / "imp"), "--out", str(tmp_path / "imp")]) == 2
    assert "--out must be another folder" in capsys.readouterr().err
