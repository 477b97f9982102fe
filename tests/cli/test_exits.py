"""One exit-code table and one usage-error base: the commands raise, `main` maps the error to exit code 2 and one
`error: <message>` line; a report that cannot be written is an error, never a skip."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from harness.cli import COMMANDS, Exit, main
from harness.run.folder import REPORT_FILE, RESULTS_FILE, SUMMARY_FILE
from tests.run.corpus_builder import write_corpus


def test_every_command_module_reads_the_one_table() -> None:
    for module_name in set(COMMANDS.values()):
        module = importlib.import_module(module_name)
        for name, code in (("EXIT_OK", Exit.OK), ("EXIT_GATE", Exit.GATE), ("EXIT_USAGE", Exit.USAGE)):
            if hasattr(module, name):
                assert getattr(module, name) is code, (module_name, name)
    assert [int(c) for c in Exit] == [0, 1, 2, 130, 143]  # the meanings scripts and CI rely on (signals: 128 + n)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["power", "--cases", "0"], "--cases must be positive"),
        (["power", "--diff", "150"], "--diff must lie in (0, 100]"),
        (["cases", "validate", "no/such/dir"], "no such path: no/such/dir"),
        (["report", "a", "b"], "give --out for a report that combines several runs"),
        (["report", "no/such/run"], "no/such/run"),
        (["import", "halueval-qa", "no/such/file.json", "--out", "x"], "no such file: no/such/file.json"),
    ],
)
def test_bad_usage_exits_2_with_one_error_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == Exit.USAGE
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and message in lines[0], err


def test_a_report_that_cannot_be_written_fails_the_run_and_keeps_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    (out / REPORT_FILE).mkdir(parents=True)  # a folder where the page must go: it cannot be written
    assert main(["run", "--cases", str(corpus), "--out", str(out)]) == Exit.USAGE
    err = capsys.readouterr().err
    assert f"error: {out / REPORT_FILE}: the report could not be written" in err, err
    assert (out / RESULTS_FILE).stat().st_size > 0  # finished results are never lost
    assert json.loads((out / SUMMARY_FILE).read_text())["variants"]
