"""Damaged run folders (issue 17): a corrupt line anywhere in a run file exits 2 naming the file and line,
for `vbench report` and `vbench run --resume` alike; `--resume --drop-corrupt` takes it out and redoes its case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.folder import DROPPED_FILE, read_results
from tests.run.corpus_builder import write_corpus

CORRUPTIONS = {
    "cut": lambda line: line[: len(line) // 3],
    "not utf-8": lambda line: line[:20] + "\udcff" + line[21:],
    "other schema": lambda line: json.dumps({**json.loads(line), "case_id": 7}),
    "garbage": lambda _line: "\x00\x00 <<<>>> not a record",
}


def run_args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--cases", str(corpus), "--out", str(out), "--no-cache", "--no-report", *extra]


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, Path]:
    """A finished reference run of the small corpus (8 results) and its corpus folder."""
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    assert main(run_args(corpus, out)) == 0
    return corpus, out


def corrupt(path: Path, number: int, how: str) -> str:
    """Replace line `number` (1-based) of a JSON-lines file; return the case id the line held."""
    lines = path.read_text(encoding="utf-8").splitlines()
    case_id = str(json.loads(lines[number - 1]).get("case_id") or json.loads(lines[number - 1]).get("id"))
    lines[number - 1] = CORRUPTIONS[how](lines[number - 1])
    path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n")
    return case_id


@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_a_corrupt_middle_line_exits_2_naming_file_and_line(
    finished: tuple[Path, Path], how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, out = finished
    results = out / "results.jsonl"
    corrupt(results, 4, how)
    capsys.readouterr()
    assert main(["report", str(out), "--rescore"]) == 2
    assert f"{results}:4: " in capsys.readouterr().err
    (out / "summary.json").unlink()  # report scores again when the summary is gone
    assert main(["report", str(out)]) == 2
    assert f"{results}:4: " in capsys.readouterr().err
    assert main(run_args(corpus, out, "--resume")) == 2
    err = capsys.readouterr().err
    assert f"{results}:4: " in err and "--resume --drop-corrupt" in err and "Traceback" not in err


def test_drop_corrupt_takes_the_line_out_and_redoes_its_case(
    finished: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, out = finished
    before = {r.key: r.verdict for r in read_results(out)}
    results = out / "results.jsonl"
    original = results.read_text(encoding="utf-8").splitlines()
    lost = corrupt(results, 3, "cut")
    assert main(run_args(corpus, out, "--resume", "--drop-corrupt")) == 0
    assert "dropped corrupt line(s) 3" in capsys.readouterr().err
    after = read_results(out)
    assert {r.key: r.verdict for r in after} == before  # the case was redone, with the same outcome
    assert [r.case_id for r in after].count(lost) == 1
    kept = results.read_text(encoding="utf-8").splitlines()
    assert kept[:2] == original[:2] and kept[2:-1] == original[3:]  # the other lines are untouched, in order
    dropped = [json.loads(line) for line in (out / DROPPED_FILE).read_text(encoding="utf-8").splitlines()]
    assert [d["line"] for d in dropped] == [3] and dropped[0]["text"] == original[2][: len(original[2]) // 3]
    assert main(["report", str(out), "--rescore"]) == 0


def test_drop_corrupt_with_nothing_to_drop_or_without_resume_exits_2(
    finished: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, out = finished
    assert main(run_args(corpus, out, "--resume", "--drop-corrupt")) == 2
    assert "has no corrupt line; nothing to drop" in capsys.readouterr().err
    assert main(run_args(corpus, out, "--drop-corrupt")) == 2
    assert "only works with resume" in capsys.readouterr().err


def test_a_torn_last_line_is_still_no_error(finished: tuple[Path, Path]) -> None:
    """What a kill leaves (a last line without its newline) is not corruption: resume goes on silently."""
    corpus, out = finished
    results = out / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30], encoding="utf-8")
    assert main(run_args(corpus, out, "--resume")) == 0
    assert len(read_results(out)) == len(lines)


@pytest.mark.parametrize("name", ["cases.jsonl", "outcomes.jsonl", "manifest.json"])
def test_other_run_files_are_named_too(
    finished: tuple[Path, Path], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _corpus, out = finished
    path = out / name
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:10]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    if name == "outcomes.jsonl":
        assert main(["compare", str(out), str(out)]) == 2
        assert f"{path}:2: not JSON" in capsys.readouterr().err
    else:
        assert main(["report", str(out), "--rescore"]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and "Traceback" not in err
        if name == "cases.jsonl":
            assert f"{path}:2: " in err
