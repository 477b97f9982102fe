"""`vbench run` scores records as they are written: the files are those scoring the folder afterwards writes."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import harness.cli.run as cli_run
from harness.cli import main
from harness.cli.run import CaseViewsAsItGoes, FinishApart, Preload, ScoreAsItGoes
from harness.corpus.schema import Case
from harness.report.render import render_scored
from harness.run.endpoints import EndpointDown
from harness.run.folder import read_cases, read_manifest, read_results
from harness.run.gates import GateSettings
from harness.score.scoring import score_run
from tests.report.conftest import embedded

ROOT = Path(__file__).resolve().parents[2]
SCORED = ("summary.json", "outcomes.jsonl", "junit.xml")


def read_cases_as_models(run: Path) -> list[Case]:
    return [Case.model_validate(data) for data in read_cases(run).values()]


def _same_as_scoring_the_folder(run: Path) -> None:
    as_it_went = {name: (run / name).read_bytes() for name in SCORED}
    score_run(run, GateSettings.from_manifest_settings(read_manifest(run).settings))
    assert {name: (run / name).read_bytes() for name in SCORED} == as_it_went


def test_a_perturbing_run_scored_as_it_goes_keeps_what_robustness_reads(tmp_path: Path) -> None:
    """Robustness pairs each perturbed answer with the original's: the scorer keeps those records when the run
    perturbs (and only their tally's part otherwise), so the robustness figures are those of the folder."""
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--perturb", "claim-order"]
    assert main([*args, "--out", str(run), "--no-report"]) in (0, 1)
    robustness = json.loads((run / "summary.json").read_text())["variants"][0]["robustness"]
    assert robustness and "claim-order" in json.dumps(robustness)
    _same_as_scoring_the_folder(run)


def test_a_run_scored_as_it_goes_writes_what_scoring_its_folder_writes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(run), "--no-report"]) == 0
    as_it_went = {name: (run / name).read_bytes() for name in SCORED}
    score_run(run, GateSettings.from_manifest_settings(read_manifest(run).settings))
    assert {name: (run / name).read_bytes() for name in SCORED} == as_it_went


class Unreadable(dict):  # type: ignore[type-arg]
    """Cases that cannot be read back: scoring a record against its case raises."""

    def get(self, key: object, default: object = None) -> object:
        raise OSError(f"case {key} cannot be read")


def test_a_record_that_cannot_be_scored_drops_the_scorer_not_the_run(tmp_path: Path) -> None:
    """Scoring during the run never stops it: the folder is then scored after the run, as it always was."""
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(run), "--no-report"]) == 0
    done = Preload(())
    done.start()
    done.join()
    scoring = ScoreAsItGoes(done, 200, Unreadable())
    records = read_results(run)
    scoring(records[0])
    assert scoring.failed and scoring.finish() is None
    scoring(records[1])  # later records are let through untouched
    assert scoring.scorer is None and scoring.waiting == []


def test_the_report_vbench_run_writes_embeds_what_re_rendering_its_folder_embeds(tmp_path: Path) -> None:
    """The drill-down's cases come from the run's own case objects (`CaseViewsAsItGoes`) instead of cases.jsonl:
    the page's data is the same as `vbench report` makes from the folder."""
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--cases", str(ROOT / "cases" / "policy")]
    assert main([*args, "--out", str(run)]) in (0, 1)
    assert main(["report", str(run), "--out", str(tmp_path / "again")]) == 0
    made, again = embedded(run / "report.html"), embedded(tmp_path / "again" / "report.html")
    assert len(made["cases"]) > 100 and made == again


def test_case_views_made_as_the_run_goes_spare_reading_the_cases(tmp_path: Path) -> None:
    """With the views the run made, the report reads no case from the folder: its drill-down is the same without
    cases.jsonl. A record written while the modules still load, or of another case, makes no view."""
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--out", str(run)]) in (0, 1)  # fmt: skip
    cases = {c.id: c for c in read_cases_as_models(run)}
    records = read_results(run)
    loading = Preload(())
    views = CaseViewsAsItGoes(loading, read_manifest(run).excerpt_chars)
    views(records[0], cases[records[0].case_id])  # the modules still load: left to the report
    assert views.views == {}
    loading.start()
    loading.join()
    views(records[0], cases[records[1].case_id])  # not this record's case
    assert views.views == {}
    untraced = records[0].model_copy(update={"trace_from_case": False})
    views(untraced, cases[untraced.case_id])
    assert views.views[untraced.case_id].trace is None  # no record of it needs the case's trace yet
    for record in records:
        views(record, cases[record.case_id])
    assert set(views.views) == {r.case_id for r in records}
    assert views.views[untraced.case_id].trace is not None  # made again for a record whose trace was elided
    bounded = CaseViewsAsItGoes(loading, read_manifest(run).excerpt_chars)
    bounded.VIEWS_KEPT = 3
    for record in records:
        bounded(record, cases[record.case_id])
    assert len(bounded.views) == 3  # a longer run's memory does not grow with its cases
    summary = json.loads((run / "summary.json").read_text())
    (run / "cases.jsonl").unlink()
    (run / "case_views.jsonl").unlink()  # nor the views the run kept for `vbench report`
    report = render_scored(run, summary, tmp_path / "out", manifest=read_manifest(run), case_views=views.views)
    assert embedded(report) == embedded(run / "report.html")


def _forking_is_safe() -> None:
    """The finishing child is forked only where that is safe (`may_fork`); this suite's machines are Linux with
    two cores or more, so only another thread left running in the test process stops it."""
    if sys.platform != "linux" or (os.cpu_count() or 1) < 2:
        pytest.skip("the finishing child runs on Linux with more than one core only")
    assert threading.active_count() == 1, [t.name for t in threading.enumerate()]


def _finished_here(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per `finish_run` this process does itself (a child's are its own, and do not reach the list)."""
    calls: list[bool] = []
    real = cli_run.finish_run

    def finish_run(*args: Any, **kwargs: Any) -> Any:
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_run, "finish_run", finish_run)
    return calls


MEASURED = ("latency_ms", "harness_cpu_ms", "created", "issued")
"""What differs between two runs of the same cases whoever scores them: timings and clocks."""


def _scrubbed(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _scrubbed(v) for k, v in data.items() if k not in MEASURED}
    if isinstance(data, list):
        return [_scrubbed(v) for v in data]
    return data


def _same_files(one: Path, other: Path) -> None:
    """The scored files, certificate and report page of two runs of the same cases, but for the run's own id and
    what was measured."""
    for name in ("outcomes.jsonl", "junit.xml"):
        assert (one / name).read_bytes() == (other / name).read_bytes(), name
    for name in ("summary.json", "certificate.json"):
        found = [_scrubbed(json.loads((run / name).read_text().replace(run.name, "RUN"))) for run in (one, other)]
        assert found[0] == found[1], name
    pages = [
        _scrubbed(json.loads(json.dumps(embedded(run / "report.html")).replace(run.name, "RUN")))
        for run in (one, other)
    ]
    assert pages[0] == pages[1]


CASES = ["--cases", str(ROOT / "cases" / "quality"), "--cases", str(ROOT / "cases" / "policy")]


def test_a_run_finished_by_its_child_writes_what_finishing_here_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring, the certificate and the report are done by a forked child that follows results.jsonl while the
    run writes it; without the child this process does them: the files are the same either way."""
    _forking_is_safe()
    here = _finished_here(monkeypatch)
    code = main(["run", *CASES, "--out", str(tmp_path / "finished-apart")])
    assert here == []  # the child finished the run
    monkeypatch.setattr(cli_run, "may_fork", lambda: False)
    assert main(["run", *CASES, "--out", str(tmp_path / "finished-here")]) == code
    assert here == [True]
    _same_files(tmp_path / "finished-apart", tmp_path / "finished-here")


def test_a_finishing_child_that_fails_leaves_the_work_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that raises (or is killed) sends no summary: this process scores and reports the run itself, and an
    error is raised here, where its exit code is decided."""
    _forking_is_safe()
    here = _finished_here(monkeypatch)
    code = main(["run", *CASES, "--out", str(tmp_path / "finished-apart")])

    def broken(*args: Any) -> None:
        raise OSError("the child cannot finish")

    monkeypatch.setattr(cli_run, "_follow_and_finish", broken)
    assert main(["run", *CASES, "--out", str(tmp_path / "finished-here")]) == code
    assert here == [True]
    _same_files(tmp_path / "finished-apart", tmp_path / "finished-here")


def test_a_run_that_fails_stops_its_finishing_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that goes down ends the command with exit 2: the child is killed and reaped before it scores
    anything, so the folder holds no summary of a run that did not end."""
    _forking_is_safe()
    made: list[FinishApart] = []
    real_fork = FinishApart.fork.__func__  # type: ignore[attr-defined]

    def fork(cls: type[FinishApart], *args: Any) -> FinishApart | None:
        apart = real_fork(cls, *args)
        made.append(apart)
        return apart

    def run_study(*args: Any, on_start: Any = None, **kwargs: Any) -> None:
        on_start()
        raise EndpointDown("http://127.0.0.1:9/v1", 5, "connection refused")

    monkeypatch.setattr(FinishApart, "fork", classmethod(fork))
    monkeypatch.setattr(cli_run, "run_study", run_study)
    run = tmp_path / "run"
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(run)]) == 2
    assert len(made) == 1 and made[0] is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(made[0]._forked._pid, os.WNOHANG)  # reaped already
    assert not (run / "summary.json").exists()


def test_a_run_that_cannot_fork_its_child_finishes_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A system with no process to spare (fork fails with EAGAIN) runs and scores the run in this process."""
    _forking_is_safe()
    here = _finished_here(monkeypatch)

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)  # 158 policy cases: read here, without a pool of readers
    assert main(["run", "--cases", str(ROOT / "cases" / "policy"), "--out", str(tmp_path / "run"), "--no-report"]) == 0
    assert here == [True]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["conformance"]["policy_passed"] == 158
