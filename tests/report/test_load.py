"""The report's reading of a run folder: the case views the run keeps for `vbench report`, and what it does
with a views file it cannot trust."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest
from jinja2.utils import htmlsafe_json_dumps

from harness.cli import main
from harness.report.casedata import html_json
from harness.run.folder import CASE_VIEWS_FILE
from tests.report.conftest import embedded


@pytest.fixture
def run_copy(reference_run: Path, tmp_path: Path) -> Path:
    """A copy of the session's reference run, free to change."""
    return Path(shutil.copytree(reference_run, tmp_path / "run"))


def _report(run: Path, out: Path) -> dict:
    assert main(["report", str(run), "--out", str(out)]) == 0
    return embedded(out / "report.html")


def _view_lines(run: Path) -> tuple[str, list[tuple[dict, dict]]]:
    """The header, and each view's (id, title, trace, checksum) with its page JSON read back."""
    head, *lines = (run / CASE_VIEWS_FILE).read_text(encoding="utf-8").splitlines()
    return head, [(json.loads(meta), json.loads(view)) for meta, view in (line.split("\t", 1) for line in lines)]


def _view_line(meta: dict, view: str) -> str:
    return json.dumps(meta | {"crc": zlib.crc32(view.encode())}) + "\t" + view


def test_the_run_keeps_the_view_of_every_case_its_page_shows(run_copy: Path) -> None:
    shown = embedded(run_copy / "report.html")
    _, views = _view_lines(run_copy)
    run_id = json.loads((run_copy / "manifest.json").read_text())["run_id"]
    assert {f"{run_id}::{meta['id']}": view for meta, view in views} == shown["cases"]
    for meta, _ in views:
        assert meta["trace"] is not None  # the reference run elides every quality record's trace


def test_vbench_report_shows_the_cases_from_the_views_without_reading_cases_jsonl(
    run_copy: Path, tmp_path: Path
) -> None:
    """The views stand in for the cases: with cases.jsonl gone the page is the same; with the views gone too, the
    drill-down has no case to show (so the first page did come from the views)."""
    before = embedded(run_copy / "report.html")
    (run_copy / "cases.jsonl").unlink()
    assert _report(run_copy, tmp_path / "a") == before
    (run_copy / CASE_VIEWS_FILE).unlink()
    without = _report(run_copy, tmp_path / "b")
    assert without["cases"] == {} and len(without["records"]) == len(before["records"])


def test_a_views_file_of_other_code_or_with_broken_lines_is_made_again_from_the_cases(
    run_copy: Path, tmp_path: Path
) -> None:
    before = embedded(run_copy / "report.html")
    head, views = _view_lines(run_copy)
    lines = [_view_line(meta, html_json(view)) for meta, view in views]
    (meta, view), rest = views[0], lines[1:]
    key = next(k for k in before["cases"] if k.endswith(f"::{meta['id']}"))
    others = {k: v for k, v in before["cases"].items() if k != key}

    # a line whose view is JSON the writer made (HTML-safe, its checksum right) is shown as it is
    edited = _view_line(meta | {"title": "edited"}, html_json(view | {"title": "<b>edited</b>"}))
    (run_copy / CASE_VIEWS_FILE).write_text("\n".join([head, edited, *rest, "{not json", "[1]", "a\tb"]) + "\n")
    shown = _report(run_copy, tmp_path / "a")
    assert "<b>edited" not in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    assert shown["cases"][key]["title"] == "<b>edited</b>"
    assert next(r["title"] for r in shown["records"] if r["case"] == meta["id"]) == "edited"
    assert {k: v for k, v in shown["cases"].items() if k != key} == others

    # markup the writer would have escaped, or a checksum that does not match: that case is made again
    raw = _view_line(meta, json.dumps(view | {"title": "<script>window.__pwned='views'</script>"}))
    wrong = _view_line(meta, html_json(view | {"title": "edited"})).replace('"crc": ', '"crc": 1')
    for forged in (raw, wrong):
        (run_copy / CASE_VIEWS_FILE).write_text("\n".join([head, forged, *rest]) + "\n")
        assert _report(run_copy, tmp_path / "b") == before
        page = (tmp_path / "b" / "report.html").read_text(encoding="utf-8")
        assert "__pwned='views'" not in page and "__pwned=\\u0027views" not in page  # not shown, even escaped

    # another code's views are not used: every case is made again from cases.jsonl
    other = json.loads(head) | {"code": "0" * 32}
    (run_copy / CASE_VIEWS_FILE).write_text("\n".join([json.dumps(other), edited, *rest]) + "\n")
    assert _report(run_copy, tmp_path / "c") == before
    (run_copy / CASE_VIEWS_FILE).write_text("not a header\n" + "\n".join([edited, *rest]) + "\n")
    assert _report(run_copy, tmp_path / "d") == before


@pytest.mark.parametrize(
    "value",
    [
        {"b": "</script><script>alert('x')</script>", "a": ["&amp;", "é", "\U0001f600", 1.5, None, True]},
        ["\u2028", {"k": "it's"}],
        {"lone": "\ud800 surrogate"},
    ],
)
def test_html_json_is_jinjas_tojson_in_the_given_key_order(value: object) -> None:
    text = html_json(value)
    assert not set("<>&'") & set(text)
    assert json.loads(text) == value
    assert json.loads(text) == json.loads(str(htmlsafe_json_dumps(value)))
