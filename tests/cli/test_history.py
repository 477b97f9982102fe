"""`vbench history` over a recorded chain of runs: each subcommand, the store named by vbench.toml, and the
one-line errors (exit 2) of a missing store, an unknown ref and an unfinished run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.history.conftest import chain_store  # noqa: F401 - the shared recorded chain


def out_of(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_show_and_tag(chain_store: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    store = str(chain_store[0])
    code, out, _ = out_of(capsys, "history", "list", "--history", store, "--json")
    heads = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [h["commit"] for h in heads] == ["c1", "c2", "c3", "c4"]
    assert all(h["branch"] == "main" and h["variants"][0]["figures"]["verdict_accuracy"]["ci"] for h in heads)
    code, out, _ = out_of(capsys, "history", "list", "--history", store)
    assert code == 0 and "4 recorded runs" in out and out.count("main") >= 4
    code, out, _ = out_of(capsys, "history", "show", "history:main", "--history", store)
    assert code == 0 and "commit c4" in out and "verdict_accuracy: 0.952" in out and "cost unknown" in out
    first = heads[0]["id"]
    code, out, _ = out_of(capsys, "history", "tag", first, "v1-test", "--history", store)
    assert code == 0 and f"tagged {first} as v1-test" in out
    code, out, _ = out_of(capsys, "history", "show", "history:v1-test", "--history", store, "--json")
    assert json.loads(out)["commit"] == "c1"
    code, _, err = out_of(capsys, "history", "tag", first, "bad/name", "--history", store)
    assert code == 2 and err.startswith("error: tag 'bad/name'")


def test_trend_diff_and_bisect(
    chain_store: tuple[Path, list[Path]],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    store = str(chain_store[0])
    page = tmp_path / "trend.html"
    code, out, _ = out_of(capsys, "history", "trend", "verdict_accuracy", "--history", store, "--html", str(page))
    assert code == 0 and "0.9048" in out and "[0." in out and "needs 5 reference runs" in out
    assert "<svg" in page.read_text()
    code, out, _ = out_of(capsys, "history", "trend", "macro_f1", "--history", store)
    assert code == 0 and "no alert rule for macro_f1" in out
    ids = [
        json.loads(line)["id"]
        for line in out_of(capsys, "history", "list", "--history", store, "--json")[1].splitlines()
    ]
    decision = tmp_path / "d.json"
    code, out, _ = out_of(
        capsys, "history", "diff", ids[0], f"history:{ids[2]}", "--history", store, "--json", str(decision)
    )
    d = json.loads(decision.read_text())
    assert code == 0 and d["metrics"]["verdict_accuracy"]["diff"] == pytest.approx(-2 / 21)
    assert d["regressed_cases"] == ["q1-1", "q7-1"] and d["decision"].upper() in out
    code, out, _ = out_of(capsys, "history", "bisect", "q7-1", "--history", store)
    assert code == 0 and "first changed in run" in out and "(commit c3)" in out and "<- first change" in out


def test_the_store_comes_from_vbench_toml(
    chain_store: tuple[Path, list[Path]],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = out_of(capsys, "history", "list")
    assert code == 2 and err.count("\n") == 1 and "no history store" in err
    Path("vbench.toml").write_text(f'history = "{chain_store[0]}"\n')
    code, out, _ = out_of(capsys, "history", "list", "--json")
    assert code == 0 and len(out.splitlines()) == 4
    code, _, err = out_of(capsys, "history", "show", "history:nowhere")
    assert code == 2 and "no recorded run, tag or branch" in err and "Traceback" not in err


def test_an_unfinished_run_is_not_recorded(
    chain_store: tuple[Path, list[Path]],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(chain_store[1][0], run)
    (run / "summary.json").unlink()
    code, _, err = out_of(capsys, "history", "record", str(run), "--history", str(tmp_path / "h"))
    assert code == 2 and "did not finish" in err
    assert not (tmp_path / "h" / "heads").exists()
