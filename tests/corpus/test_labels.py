"""Label files: one line per answer, the last per claim wins, a torn last line is ignored, a bad line is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus.labels import LabelFileError, LabelLine, append_label, read_adjudicated, read_labels


def line(claim: str, label: str, who: str = "ann") -> LabelLine:
    return LabelLine(case_id="c1", claim_id=claim, label=label, annotator=who, at="2026-12-04T10:00:00Z")


def test_last_answer_per_claim_wins_and_adjudication_is_apart(tmp_path: Path) -> None:
    append_label(tmp_path, line("C1", "overstated"))
    append_label(tmp_path, line("C2", "unsupported"))
    append_label(tmp_path, line("C1", "contradicted"))
    append_label(tmp_path, line("C1", "direct_observation", "adjudicated"))
    assert read_labels(tmp_path) == {"ann": {("c1", "C1"): "contradicted", ("c1", "C2"): "unsupported"}}
    assert read_adjudicated(tmp_path) == {("c1", "C1"): "direct_observation"}
    lines = (tmp_path / "labels" / "ann.jsonl").read_text().splitlines()
    assert len(lines) == 3 and set(__import__("json").loads(lines[0])) == {
        "case_id",
        "claim_id",
        "label",
        "annotator",
        "at",
    }


def test_a_torn_last_line_is_ignored_a_bad_line_elsewhere_is_an_error(tmp_path: Path) -> None:
    append_label(tmp_path, line("C1", "overstated"))
    path = tmp_path / "labels" / "ann.jsonl"
    with path.open("a") as fh:
        fh.write('{"case_id": "c1", "claim_id": "C2", "lab')  # the write a kill cut off
    assert read_labels(tmp_path) == {"ann": {("c1", "C1"): "overstated"}}
    path.write_text(path.read_text() + "\n" + line("C3", "unsupported").model_dump_json() + "\n")
    with pytest.raises(LabelFileError, match=r"ann.jsonl:2: not a label line"):
        read_labels(tmp_path)


def test_an_annotator_name_is_a_plain_file_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        LabelLine(case_id="c1", claim_id="C1", label="overstated", annotator="../x", at="now")
