"""Human labels of imported sessions: `DIR/labels/<annotator>.jsonl`, one answer per line, the last per claim wins.

Every answer is appended and fsynced before it is acknowledged, so a killed labelling server loses nothing; a line
cut off mid-write is skipped and set aside by the next write (`appendlog`, the run log's torn-tail rule).
`DIR/labels/adjudicated.jsonl` (same lines) settles claims the annotators disagree on.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness.corpus import appendlog
from harness.system.models import Derivability

LABELS_DIR = "labels"
ADJUDICATED = "adjudicated"
ANNOTATOR_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_COMMENT = 2000
TORN_SUFFIX = ".torn"
"""Where a torn last line goes when the next answer is written: `<annotator>.jsonl.torn`, kept for a person."""
CLASSES: tuple[Derivability, ...] = tuple(Derivability)
"""The six classes in the order the labelling page numbers them (keys 1-6)."""

ClaimKey = tuple[str, str]
"""(case id, claim id)."""


class LabelLine(BaseModel):
    """One answer: `{"case_id", "claim_id", "label", "annotator", "at"}`, and only when set: `unsure`, `comment`,
    `request` (the page's id of the answer, so one resent after a lost reply is written once). A `label` of null
    withdraws the claim's answer (undo back to unlabelled)."""

    model_config = ConfigDict(extra="forbid")
    case_id: str = Field(min_length=1)
    claim_id: str = Field(min_length=1)
    label: Derivability | None
    annotator: str = Field(pattern=ANNOTATOR_PATTERN.pattern)
    at: str
    unsure: bool = False
    comment: str = Field(default="", max_length=MAX_COMMENT)
    request: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{8,64}$")

    def line(self) -> str:
        """The JSON line, without the fields left at their defaults."""
        return self.model_dump_json(exclude_defaults=True)


class Answers(BaseModel):
    """One label file read: the last line per claim, the request ids it holds and the torn tail it skipped."""

    latest: dict[ClaimKey, LabelLine] = Field(default_factory=dict)
    requests: set[str] = Field(default_factory=set)
    torn: int | None = None
    """The line number of a torn last line (a write cut off), skipped."""

    def labels(self) -> dict[ClaimKey, Derivability]:
        return {k: v.label for k, v in self.latest.items() if v.label is not None}


class LabelFileError(ValueError):
    """A label file line that is not a label; names the file and line."""


def labels_dir(folder: Path) -> Path:
    return folder / LABELS_DIR


def label_file(folder: Path, annotator: str) -> Path:
    if not ANNOTATOR_PATTERN.match(annotator):
        raise ValueError(f"annotator {annotator!r}: use 1-64 characters of A-Z a-z 0-9 . _ -")
    return labels_dir(folder) / f"{annotator}.jsonl"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def append_label(folder: Path, line: LabelLine) -> None:
    """Append one answer and fsync it (the file, and the folder when the file is new). A torn last line is cut off
    first and kept in `<annotator>.jsonl.torn`, so the answer is a line of its own."""
    path = label_file(folder, line.annotator)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    appendlog.end_torn_tail(path, LabelLine.model_validate_json, path.with_name(path.name + TORN_SUFFIX))
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line.line() + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    if new:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_answers(path: Path) -> Answers:
    """One label file, the last line per claim winning (`appendlog`'s torn-tail rule: a torn last line is
    skipped and reported in `torn`); any other bad line is a `LabelFileError` naming the file and line."""
    out = Answers()
    if not path.is_file():
        return out
    for number, _, _, line, exc in appendlog.read_lines(path, LabelLine.model_validate_json):
        if line is None:
            problem = str(exc.errors()[0]["msg"]) if exc is not None else "unreadable"
            raise LabelFileError(f"{path}:{number}: not a label line: {problem}")
        out.latest[(line.case_id, line.claim_id)] = line
        if line.request:
            out.requests.add(line.request)
    tail = appendlog.torn_tail(path, LabelLine.model_validate_json)
    out.torn = tail[0] if tail else None
    return out


def read_label_file(path: Path) -> dict[ClaimKey, Derivability]:
    """The answers of one file, the last per claim winning (a withdrawn answer leaves the claim unlabelled)."""
    return read_answers(path).labels()


def torn_notes(folder: Path) -> list[str]:
    """One sentence per label file whose last line was cut off mid-write, for the app and the console."""
    found = sorted(labels_dir(folder).glob("*.jsonl")) if labels_dir(folder).is_dir() else []
    out = []
    for path in found:
        tail = appendlog.torn_tail(path, LabelLine.model_validate_json)
        if tail is not None:
            out.append(
                f"{path}:{tail[0]}: a line cut off mid-write (a crash or a full disk) is skipped; the next answer "
                f"moves it to {path.name}{TORN_SUFFIX} and starts a line of its own"
            )
    return out


def read_labels(folder: Path) -> dict[str, dict[ClaimKey, Derivability]]:
    """Every annotator's answers (adjudication not included), by annotator name, sorted."""
    found = sorted(labels_dir(folder).glob("*.jsonl")) if labels_dir(folder).is_dir() else []
    return {p.stem: read_label_file(p) for p in found if p.stem != ADJUDICATED}


def read_adjudicated(folder: Path) -> dict[ClaimKey, Derivability]:
    path = labels_dir(folder) / f"{ADJUDICATED}.jsonl"
    return read_label_file(path) if path.is_file() else {}
