"""Run an adapter over a source file and write its cases to a folder, deterministically.

`collect` reads and converts (a bad record is skipped with its line number and
the rest still imported); `write_folder` replaces the generated files of the
output folder, so re-running gives byte-identical files and a record removed
from the source leaves no stale case behind.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from harness.corpus.adapters.base import Adapter, RecordError
from harness.corpus.schema import Case

README_NAME, LICENCE_NAME = "README.md", "LICENSE"


class ImportSummary(BaseModel):
    """What one import read, kept and skipped."""

    adapter: str
    source_file: str
    source_sha256: str
    imported: int = 0
    cases: int = 0
    skipped: list[RecordError] = Field(default_factory=list)
    limit: int | None = None
    stopped_at_limit: bool = False

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(e.reason for e in self.skipped).items()))

    def lines(self) -> list[str]:
        """The human summary, one line each."""
        out = [f"{self.imported} record(s) imported as {self.cases} case(s); {len(self.skipped)} skipped"]
        out += [f"  skipped, {reason}: {n}" for reason, n in self.skipped_by_reason().items()]
        if self.stopped_at_limit:
            out.append(f"  stopped after {self.limit} imported record(s) (--limit); the rest was not read")
        return out


def collect(adapter: Adapter[Any], path: Path, limit: int | None = None) -> tuple[list[Case], ImportSummary]:
    """Every case the good records of `path` yield (at most `limit` records), and the summary."""
    summary = ImportSummary(adapter=adapter.name, source_file=path.name, source_sha256=_sha256(path), limit=limit)
    cases: list[Case] = []
    for _line, item in adapter.records(path):
        if limit is not None and summary.imported >= limit:
            summary.stopped_at_limit = True
            break
        if isinstance(item, RecordError):
            summary.skipped.append(item)
            continue
        new = adapter.to_cases(item)
        cases.extend(new)
        summary.imported += 1
        summary.cases += len(new)
    return cases, summary


def case_yaml(case: Case) -> str:
    """A case as YAML in the contract's key order; empty optional parts left out."""
    data = case.model_dump(
        mode="json",
        by_alias=True,
        exclude_none=True,
        exclude={"session": {"other_sessions", "self_evaluation"}},
    )
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)


def readme_text(adapter: Adapter[Any], summary: ImportSummary) -> str:
    """The generated folder's README: source, licence, what was imported and how to regenerate it."""
    skipped = "".join(f"- {e}\n" for e in summary.skipped) or "none\n"
    limit = (
        f"Limited to the first {summary.limit} good records (`--limit {summary.limit}`).\n\n" if summary.limit else ""
    )
    return (
        f"# `{adapter.name}`: imported cases (generated)\n\n"
        f"Source: {adapter.dataset}; file `{summary.source_file}`\n"
        f"(sha256 `{summary.source_sha256}`).\n\n"
        f"Licence: {adapter.licence_note}.\n"
        f"Full text in `{LICENCE_NAME}`. Every case repeats the note and its source record\n"
        "(file, line, record id, which answer) in `meta`.\n\n"
        f"{adapter.description}\n"
        f"{limit}"
        f"Records imported: {summary.imported} ({summary.cases} cases). Records skipped: {len(summary.skipped)}.\n\n"
        f"Skipped records:\n\n{skipped}\n"
        "Do not edit these files by hand; re-run the importer, which replaces every\n"
        f"`{adapter.name}-*.yaml` here (a record removed from the source leaves no case behind):\n\n"
        f"    vbench import {adapter.name} PATH/{summary.source_file} --out THIS_FOLDER\n"
    )


def write_folder(out: Path, adapter: Adapter[Any], cases: list[Case], summary: ImportSummary) -> list[Path]:
    """Write every case as `<id>.yaml`, plus README and LICENSE; remove generated cases no longer produced."""
    out.mkdir(parents=True, exist_ok=True)
    files = {out / f"{case.id}.yaml": case_yaml(case) for case in cases}
    files[out / README_NAME] = readme_text(adapter, summary)
    files[out / LICENCE_NAME] = adapter.licence_text
    for stale in sorted(out.glob(f"{adapter.name}-*.yaml")):
        if stale not in files:
            stale.unlink()
    for path, text in sorted(files.items()):
        path.write_text(text, encoding="utf-8", newline="\n")
    return sorted(files)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()
