"""`vbench run` scores records as they are written: the files are those scoring the folder afterwards writes."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.cli.run import CaseViewsAsItGoes, Preload, ScoreAsItGoes
from harness.corpus.schema import Case
from harness.report.render import render_scored
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
