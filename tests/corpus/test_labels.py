"""Label files: one line per answer, the last per claim wins, a torn last line is ignored, a bad line is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus.labels import (
    LabelFileError,
    LabelLine,
    append_label,
    read_adjudicated,
    read_answers,
    read_labels,
    torn_notes,
)


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


def test_the_next_answer_after_a_torn_line_is_a_line_of_its_own_and_the_torn_bytes_are_kept(tmp_path: Path) -> None:
    append_label(tmp_path, line("C1", "overstated"))
    path = tmp_path / "labels" / "ann.jsonl"
    torn = '{"case_id": "c1", "claim_id": "C2", "lab'
    with path.open("a") as fh:
        fh.write(torn)  # a full disk or a kill cut this write off
    assert read_answers(path).torn == 2
    assert torn_notes(tmp_path) == [f"{path}:2: a line cut off mid-write (a crash or a full disk) is skipped; "
                                    "the next answer moves it to ann.jsonl.torn and starts a line of its own"]  # fmt: skip
    append_label(tmp_path, line("C3", "unsupported"))
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and path.read_text().endswith("\n")
    assert read_labels(tmp_path) == {"ann": {("c1", "C1"): "overstated", ("c1", "C3"): "unsupported"}}
    assert (tmp_path / "labels" / "ann.jsonl.torn").read_text() == torn + "\n"
    assert read_answers(path).torn is None and torn_notes(tmp_path) == []


def test_a_whole_last_line_without_its_newline_is_kept_and_ended(tmp_path: Path) -> None:
    path = tmp_path / "labels" / "ann.jsonl"
    path.parent.mkdir()
    path.write_text(line("C1", "overstated").line())  # the newline alone was cut off
    assert read_labels(tmp_path) == {"ann": {("c1", "C1"): "overstated"}}
    append_label(tmp_path, line("C2", "contradicted"))
    assert len(path.read_text().splitlines()) == 2
    assert read_labels(tmp_path)["ann"] == {("c1", "C1"): "overstated", ("c1", "C2"): "contradicted"}


def test_a_withdrawn_answer_leaves_the_claim_open_and_extra_fields_only_when_set(tmp_path: Path) -> None:
    append_label(tmp_path, line("C1", "overstated"))
    append_label(tmp_path, LabelLine(case_id="c1", claim_id="C1", label=None, annotator="ann", at="t"))
    unsure = LabelLine(case_id="c1", claim_id="C2", label="unsupported", annotator="ann", at="t", unsure=True,
                       comment="log is <cut>", request="r-12345678")  # fmt: skip
    append_label(tmp_path, unsure)
    answers = read_answers(tmp_path / "labels" / "ann.jsonl")
    assert answers.labels() == {("c1", "C2"): "unsupported"} and answers.requests == {"r-12345678"}
    assert answers.latest[("c1", "C2")].comment == "log is <cut>" and answers.latest[("c1", "C2")].unsure
    first = (tmp_path / "labels" / "ann.jsonl").read_text().splitlines()[0]
    assert set(__import__("json").loads(first)) == {"case_id", "claim_id", "label", "annotator", "at"}
