"""`finish`: a run folder's records scored, certified and reported, one way, with its phases timed for a watcher."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.app.finish import Finisher, finish
from harness.app.phases import CERTIFICATE, REPORT, SCORE, phase, watching
from harness.cli import main
from harness.run.folder import read_manifest
from harness.run.gates import GateSettings
from tests.report.conftest import embedded

ROOT = Path(__file__).resolve().parents[2]
FINISHED = ("summary.json", "outcomes.jsonl", "junit.xml", "certificate.json", "summary.md")


def test_finish_writes_what_vbench_run_wrote_and_names_its_phases(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy" / "gatekeeper"), "--out", str(run)]) == 0
    written = {name: (run / name).read_bytes() for name in FINISHED}
    page = embedded(run / "report.html")
    again = tmp_path / "again"
    shutil.copytree(run, again, ignore=shutil.ignore_patterns(*FINISHED, "report.html", "certificate.html"))
    seen: list[str] = []
    with watching(lambda name, cpu, wall: seen.append(name)):
        finished = finish(again, GateSettings(), read_manifest(again), corpus_policy=read_manifest(again).policy_cases)
    assert seen == [SCORE, CERTIFICATE, REPORT]
    assert finished.summary["passed"] and finished.headline.startswith("Partially certified")
    assert {
        name: (again / name).read_bytes().replace(b"again", b"run") for name in FINISHED if name != "summary.md"
    } == {name: data for name, data in written.items() if name != "summary.md"}
    assert embedded(again / "report.html") == page


def test_a_finisher_without_the_report_writes_none(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert (
        main(["run", "--cases", str(ROOT / "cases" / "policy" / "gatekeeper"), "--out", str(run), "--no-report"]) == 0
    )
    (run / "summary.json").unlink()
    finisher = Finisher(report=False)
    finisher.start()  # the imports ahead, as `run_study` starts them
    finisher.finish(run, GateSettings(), read_manifest(run), corpus_policy=0)
    assert (run / "summary.json").exists() and not (run / "report.html").exists()


def test_phases_go_to_watchers_only_while_they_watch() -> None:
    seen: list[tuple[str, float, float]] = []
    with phase("unwatched"):
        pass
    with watching(lambda *took: seen.append(took)):
        try:
            with phase("raises"):
                raise ValueError("timed all the same")
        except ValueError:
            pass
    with phase("after"):
        pass
    assert [name for name, _, _ in seen] == ["raises"]
    assert all(cpu >= 0 and wall >= 0 for _, cpu, wall in seen)
