"""`vbench import halueval-qa`: broken lines are skipped by line number, output is deterministic and committed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpus.adapters.halueval import HaluEvalQA
from harness.corpus.adapters.importer import collect
from harness.corpus.loader import load_cases
from harness.run.conformance import label_consistency_problems

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "cases" / "external" / "halueval-qa"
VENDORED = COMMITTED / "source" / "qa_one-turn_part1.jsonl"
SHARED = REPO.parent / "shared" / "data" / "halueval-qa" / "qa_one-turn_part1.jsonl"


def rec(i: int) -> dict[str, str]:
    return {
        "knowledge": f"Passage {i}: the tower in town {i} is {i * 10} metres tall.",
        "question": f"How tall is the tower in town {i}?",
        "right_answer": f"{i * 10} metres",
        "hallucinated_answer": f"{i * 10 + 7} metres",
    }


def jl(obj: object) -> str:
    return json.dumps(obj) + "\n"


MIXED = [
    jl(rec(1)),  # 1 good
    '{"knowledge": "cut off", "question": \n',  # 2 bad JSON
    jl({k: v for k, v in rec(3).items() if k != "knowledge"}),  # 3 missing field
    jl({**rec(4), "question": ["not", "a", "string"]}),  # 4 wrong type
    jl({**rec(5), "right_answer": ""}),  # 5 empty answer
    jl(rec(6)),  # 6 good, after four broken lines
]


def write(tmp_path: Path, lines: list[str], name: str = "src.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def folder(path: Path) -> dict[str, bytes]:
    """Top-level files of a folder, by name."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def test_collect_skips_broken_records_by_line_and_keeps_going(tmp_path: Path) -> None:
    cases, summary = collect(HaluEvalQA(), write(tmp_path, MIXED))
    assert (summary.imported, summary.cases, len(summary.skipped)) == (2, 4, 4)
    assert [(e.line, e.reason) for e in summary.skipped] == [
        (2, "bad JSON"),
        (3, "missing field"),
        (4, "wrong type"),
        (5, "empty field"),
    ]
    assert summary.skipped_by_reason() == {"bad JSON": 1, "empty field": 1, "missing field": 1, "wrong type": 1}
    assert [c.id for c in cases] == [
        "halueval-qa-0001-supported",
        "halueval-qa-0001-hallucinated",
        "halueval-qa-0006-supported",
        "halueval-qa-0006-hallucinated",
    ]
    assert cases[2].executor.final_answer == "60 metres"


def test_cli_imports_reports_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["import", "halueval-qa", str(write(tmp_path, MIXED)), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    for needle in (
        "src.jsonl:2: bad JSON",
        "src.jsonl:3: missing field: no key 'knowledge'",
        "src.jsonl:4: wrong type: 'question' is an array",
        "src.jsonl:5: empty field: 'right_answer'",
    ):
        assert needle in captured.err
    assert "2 record(s) imported as 4 case(s); 4 skipped" in captured.out
    assert "skipped, bad JSON: 1" in captured.out
    assert sorted(folder(out)) == [
        "LICENSE",
        "README.md",
        "halueval-qa-0001-hallucinated.yaml",
        "halueval-qa-0001-supported.yaml",
        "halueval-qa-0006-hallucinated.yaml",
        "halueval-qa-0006-supported.yaml",
    ]
    assert len(load_cases([out])) == 4
    readme = (out / "README.md").read_text()
    assert "Records imported: 2 (4 cases). Records skipped: 4." in readme
    assert "src.jsonl:2: bad JSON" in readme
    assert "Copyright (c) 2020 RUCAIBox" in (out / "LICENSE").read_text()


def test_cli_exits_2_when_the_file_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["import", "halueval-qa", str(tmp_path / "nope.jsonl"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not out.exists()


def test_cli_exits_2_when_nothing_can_be_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "halueval-qa-0001-supported.yaml").write_text("kept: true\n")
    src = write(tmp_path, MIXED[1:5])
    assert main(["import", "halueval-qa", str(src), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "0 record(s) imported as 0 case(s); 4 skipped" in captured.out
    assert "nothing imported" in captured.err
    assert folder(out) == {"halueval-qa-0001-supported.yaml": b"kept: true\n"}


def test_cli_rejects_a_bad_limit(tmp_path: Path) -> None:
    src = write(tmp_path, MIXED)
    assert main(["import", "halueval-qa", str(src), "--out", str(tmp_path / "o"), "--limit", "0"]) == 2


def test_limit_caps_the_imported_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    src = write(tmp_path, [jl(rec(i)) for i in range(1, 6)])
    assert main(["import", "halueval-qa", str(src), "--out", str(out), "--limit", "2"]) == 0
    assert "--limit" in capsys.readouterr().out
    assert sorted(n for n in folder(out) if n.endswith(".yaml")) == [
        "halueval-qa-0001-hallucinated.yaml",
        "halueval-qa-0001-supported.yaml",
        "halueval-qa-0002-hallucinated.yaml",
        "halueval-qa-0002-supported.yaml",
    ]


def test_rerunning_is_byte_identical_and_drops_stale_cases(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "source").mkdir(parents=True)
    (out / "notes.yaml").write_text("not generated\n")
    (out / "source" / "keep.txt").write_text("kept\n")
    three = write(tmp_path, [jl(rec(i)) for i in (1, 2, 3)], "three.jsonl")
    assert main(["import", "halueval-qa", str(three), "--out", str(out)]) == 0
    first = folder(out)
    assert main(["import", "halueval-qa", str(three), "--out", str(out)]) == 0
    assert folder(out) == first

    one = write(tmp_path, [jl(rec(1))], "three.jsonl")
    assert main(["import", "halueval-qa", str(one), "--out", str(out)]) == 0
    assert sorted(folder(out)) == [
        "LICENSE",
        "README.md",
        "halueval-qa-0001-hallucinated.yaml",
        "halueval-qa-0001-supported.yaml",
        "notes.yaml",
    ]
    assert (out / "source" / "keep.txt").read_text() == "kept\n"


def test_the_committed_cases_are_what_the_importer_makes_of_the_vendored_source(tmp_path: Path) -> None:
    out = tmp_path / "regenerated"
    assert main(["import", "halueval-qa", str(VENDORED), "--out", str(out)]) == 0
    regenerated, committed = folder(out), folder(COMMITTED)
    assert sorted(regenerated) == sorted(committed)
    assert len([n for n in committed if n.endswith(".yaml")]) == 500
    differing = [name for name in regenerated if regenerated[name] != committed[name]]
    assert differing == []


@pytest.mark.skipif(not SHARED.exists(), reason="the shared data folder is not on this machine")
def test_the_vendored_source_is_the_shared_data_file() -> None:
    assert VENDORED.read_bytes() == SHARED.read_bytes()


def test_the_committed_cases_load_and_their_labels_imply_their_verdicts() -> None:
    cases = load_cases([COMMITTED])
    assert len(cases) == 500
    assert sum("supported" in c.tags for c in cases) == sum("hallucinated" in c.tags for c in cases) == 250
    assert [p for c in cases for p in label_consistency_problems(c)] == []
