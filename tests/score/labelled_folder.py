"""An import folder of production sessions (the project's fixture generator) and helpers to label it."""

from __future__ import annotations

from pathlib import Path

from harness.corpus.labels import LabelLine, append_label
from harness.corpus.session_import import import_sessions
from harness.corpus.sessions import Imported, load_imported
from tests.corpus.production import jsonl


def import_folder(tmp_path: Path) -> list[Imported]:
    folder = tmp_path / "imp"
    report = import_sessions(str(jsonl(tmp_path / "s.jsonl")), folder)
    assert report.written and not report.bad
    return load_imported(folder)


def label(folder: Path, who: str, case_id: str, claim_id: str, value: str) -> None:
    append_label(
        folder, LabelLine(case_id=case_id, claim_id=claim_id, label=value, annotator=who, at="2026-12-04T10:00:00Z")
    )
