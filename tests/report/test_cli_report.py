"""`vbench report`: re-render a finished run, combine several, and say clearly what is wrong with bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from tests.report.conftest import embedded


@pytest.fixture
def run_copy(reference_run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(reference_run, dst)
    return dst


def test_rerender_a_finished_run(run_copy: Path) -> None:
    (run_copy / "report.html").unlink()
    (run_copy / "summary.md").unlink()
    assert main(["report", str(run_copy)]) == 0
    assert (run_copy / "report.html").exists() and (run_copy / "summary.md").exists()


def test_a_missing_summary_is_scored_again_from_the_log(run_copy: Path) -> None:
    before = json.loads((run_copy / "summary.json").read_text())
    (run_copy / "summary.json").unlink()
    assert main(["report", str(run_copy), "--out", str(run_copy / "out")]) == 0
    after = json.loads((run_copy / "summary.json").read_text())
    assert after["conformance"] == before["conformance"]
    assert [v["verdict_accuracy"] for v in after["variants"]] == [v["verdict_accuracy"] for v in before["variants"]]


def test_combining_runs_prefixes_clashing_variant_names_with_the_run_id(
    reference_run: Path, llm_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "combined"
    assert main(["report", str(reference_run), str(llm_run), "--out", str(out)]) == 0
    data = embedded(out / "report.html")
    variants = {r["variant"] for r in data["records"]}
    assert "reference-run/reference" in variants and "browser-run/reference" in variants
    assert "reference-run/policy" in variants and "browser-run/policy" in variants
    assert any(v.startswith("openai:") for v in variants)  # a name in one run only keeps its name
    html = (out / "report.html").read_text()
    assert "run reference-run" in html and "run browser-run" in html
    # every pair across both runs is compared, paired by case
    assert html.count("reference-run/reference</td>") >= 2
    md = (out / "summary.md").read_text()
    assert md.count("**Conformance (") == 2  # one certification per run


def test_the_same_run_twice_gets_distinct_labels(reference_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "twice"
    assert main(["report", str(reference_run), str(reference_run), "--out", str(out)]) == 0
    variants = {r["variant"] for r in embedded(out / "report.html")["records"]}
    assert {"reference-run/reference", "reference-run-2/reference"} <= variants


def test_several_runs_need_out(reference_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(reference_run), str(reference_run)]) == 2
    assert "--out" in capsys.readouterr().err


def test_bad_folders_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "nope: no such run folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "manifest.json: missing" in capsys.readouterr().err


def test_a_broken_result_line_is_named_by_file_and_line(run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = (run_copy / "results.jsonl").read_text().splitlines(keepends=True)
    lines[2] = '{"case_id": "x", "kind": "quality"}\n'
    (run_copy / "results.jsonl").write_text("".join(lines))
    assert main(["report", str(run_copy), "--out", str(run_copy / "o")]) == 2
    err = capsys.readouterr().err
    assert "results.jsonl:3" in err


def test_a_torn_last_line_is_skipped(run_copy: Path) -> None:
    with (run_copy / "results.jsonl").open("a") as fh:
        fh.write('{"schema_version": "results_v1", "case_id": "q1", "ki')
    assert main(["report", str(run_copy)]) == 0


def test_prices_give_a_cost_and_a_small_budget_is_stated(run_copy: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text("[reference]\ninput = 1.0\noutput = 2.0\n")
    assert main(["report", str(run_copy), "--prices", str(prices), "--max-embedded", "3"]) == 0
    html = (run_copy / "report.html").read_text()
    assert "0.0000 USD" in html  # the reference verifier uses no tokens: a known price, zero cost
    assert len(embedded(run_copy / "report.html")["records"]) == 3
    results = sum(1 for _ in (run_copy / "results.jsonl").open())
    assert f"This page embeds 3 of {results} results" in html
    (tmp_path / "bad.json").write_text('{"reference": {"input": -1, "output": 0}}')
    assert main(["report", str(run_copy), "--prices", str(tmp_path / "bad.json")]) == 2


def test_a_stale_summary_is_scored_again(run_copy: Path) -> None:
    summary = json.loads((run_copy / "summary.json").read_text())
    results = summary["run"]["results"]
    summary["run"]["results"] = results + 7  # as if the log had grown since scoring
    (run_copy / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(run_copy)]) == 0
    assert json.loads((run_copy / "summary.json").read_text())["run"]["results"] == results


def test_rerendering_loads_no_plotting_or_frame_library(run_copy: Path) -> None:
    """The charts are SVG written by hand and the tables plain Python: re-rendering a run (no comparison, decision or
    early stop, which are the scorer's to word) loads neither matplotlib, pandas nor scipy, nor numpy or the store's
    database toolkit (sqlalchemy), which only a run or a rescore needs."""
    from tests.test_startup import HEAVY, loaded_after

    (run_copy / "report.html").unlink()
    code = f"from harness.cli import main\nassert main(['report', {str(run_copy)!r}]) == 0"
    assert loaded_after(code, (*HEAVY, "numpy", "sqlalchemy")) == []
    assert (run_copy / "report.html").exists()
