"""bench.memory end to end at a small size: whole processes measured, figures and verdicts written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_memory_bench_measures_whole_processes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--small", "12", "--large", "24", "--results", "600", "--out",
         str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    (figures_file,) = tmp_path.glob("*-memory.json")
    fig = json.loads(figures_file.read_text())
    runs = fig["runs"]
    assert set(runs) == {"12", "24"} and all(r["exit"] == 0 and r["peak_rss_mib"] > 50 for r in runs.values())
    assert fig["ratio"] == runs["24"]["peak_rss_mib"] / runs["12"]["peak_rss_mib"]
    assert fig["results"]["count"] == 600 and fig["results"]["exit"] in (0, 1) and fig["results"]["error"] is None
    assert fig["per_case_kib"] == (runs["24"]["peak_rss_mib"] - runs["12"]["peak_rss_mib"]) * 1024 / 12
    res = fig["results"]
    assert fig["passed"] == {
        "ratio": fig["ratio"] <= 1.3,
        "per_case_kib": fig["per_case_kib"] <= 25,
        "results_seconds": res["wall_s"] < 30,
        "results_mib": res["peak_rss_mib"] < 1024,
    }
    assert done.returncode == (0 if all(fig["passed"].values()) else 1)
    text = (tmp_path / figures_file.name.replace(".json", ".md")).read_text()
    assert "| 600 results scored + reported: peak RSS |" in text and "| peak RSS 24 / 12 cases |" in text
