"""Start-up: the CLI loads only what the asked command needs (timings are in the bench, not asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy", "matplotlib", "pandas", "openai", "sklearn", "pyarrow", "datasets")


def loaded_after(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return out.stdout.split("\n")[-2].split()


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert loaded_after("import harness.cli") == []


def test_the_run_command_starts_without_the_scoring_and_report_libraries() -> None:
    """`vbench run` sends its first request before pandas, numpy, matplotlib or pyarrow load (they load on a
    thread while the run waits on replies: `harness.app.finish.Finisher.start`)."""
    assert loaded_after("import harness.cli.run", (*HEAVY, "numpy", "sqlalchemy")) == []
    private_store = "from harness.system.store import Store\nStore().close()"
    assert loaded_after(private_store, ("sqlalchemy",)) == []  # a run's default store needs none


def test_version_and_validate_load_no_heavy_library() -> None:
    assert (
        loaded_after("from harness.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass") == []
    )
    one = next((ROOT / "cases" / "policy").rglob("*.yaml"))
    assert loaded_after(f"from harness.cli import main\nassert main(['cases', 'validate', {str(one)!r}]) == 0") == []


def test_help_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in COMMANDS)
    # a command's own parser is built alone; an unknown command still gets the whole list and exit 2
    assert {
        a.dest for a in build_parser(["power", "--diff", "5"])._subparsers._group_actions[0].choices["power"]._actions
    } >= {"diff"}  # type: ignore[union-attr]
    assert main(["no-such-command"]) == 2


def test_exit_now_runs_the_atexit_functions_flushes_and_keeps_the_code() -> None:
    code = (
        "import atexit, sys\nfrom harness.cli import exit_now\n"
        "atexit.register(lambda: print('atexit ran', end=''))\n"
        "print('buffered;', end='')\nsys.stderr.write('err;')\nexit_now(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert (done.returncode, done.stdout, done.stderr) == (3, "buffered;atexit ran", "err;")


def test_the_command_exits_with_main_s_code_and_whole_output(tmp_path: Path) -> None:
    from tests.run.corpus_builder import write_corpus

    cases, out = write_corpus(tmp_path / "cases"), tmp_path / "run"
    run = [sys.executable, "-m", "harness.cli", "run", "--cases", str(cases), "--no-cache", "--out", str(out)]
    done = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and "verdict acc" in done.stdout  # the closing table, printed last
    assert (out / "summary.json").read_text().endswith("\n") and (out / "report.html").exists()
    bad = subprocess.run([*run[:3], "run", "--cases", str(tmp_path / "none")], capture_output=True, text=True)
    assert bad.returncode == 2 and "no such file or folder" in bad.stderr
