"""Human labels of imported sessions: `DIR/labels/<annotator>.jsonl`, one answer per line, the last per claim wins.

Every answer is appended and fsynced before it is acknowledged, so a killed labelling server loses nothing.
`DIR/labels/adjudicated.jsonl` (same lines) settles claims the annotators disagree on.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.system.models import Derivability

LABELS_DIR = "labels"
ADJUDICATED = "adjudicated"
ANNOTATOR_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
CLASSES: tuple[Derivability, ...] = tuple(Derivability)
"""The six classes in the order the labelling page numbers them (keys 1-6)."""

ClaimKey = tuple[str, str]
"""(case id, claim id)."""


class Drawn(BaseModel):
    """How the labelling page chose a session: the order, the draw's number (1, 2, ...) and the probability the
    session had of being drawn then (None for an order that is not a random draw, e.g. `disagreement`)."""

    model_config = ConfigDict(extra="forbid")
    order: Literal["random", "active", "disagreement", "file"]
    draw: int = Field(ge=1)
    probability: float | None = Field(default=None, gt=0, le=1)


class LabelLine(BaseModel):
    """One answer: `{"case_id", "claim_id", "label", "annotator", "at"}`, and `drawn` when the page chose the
    session by a draw (`vbench label serve --order random|active`)."""

    model_config = ConfigDict(extra="forbid")
    case_id: str = Field(min_length=1)
    claim_id: str = Field(min_length=1)
    label: Derivability
    annotator: str = Field(pattern=ANNOTATOR_PATTERN.pattern)
    at: str
    drawn: Drawn | None = None


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
    """Append one answer and fsync it (the file, and the folder when the file is new)."""
    path = label_file(folder, line.annotator)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line.model_dump_json(exclude_none=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    if new:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_label_lines(path: Path) -> list[LabelLine]:
    """Every answer of one file in order. A torn last line (a crash mid-write) is ignored; any other bad line is
    an error naming the file and line."""
    out: list[LabelLine] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            line = LabelLine.model_validate(json.loads(text))
        except (json.JSONDecodeError, ValidationError) as exc:
            if number == len(lines):  # no newline after it: the write that was cut off
                continue
            raise LabelFileError(f"{path}:{number}: not a label line: {str(exc).splitlines()[0]}") from None
        out.append(line)
    return out


def read_label_file(path: Path) -> dict[ClaimKey, Derivability]:
    """The answers of one file, the last per claim winning (`read_label_lines`)."""
    return {(line.case_id, line.claim_id): line.label for line in read_label_lines(path)}


def read_drawn(folder: Path) -> dict[str, dict[str, Drawn]]:
    """Per annotator, how each session they labelled was chosen (the first record per session), when recorded."""
    found = sorted(labels_dir(folder).glob("*.jsonl")) if labels_dir(folder).is_dir() else []
    out: dict[str, dict[str, Drawn]] = {}
    for path in found:
        if path.stem == ADJUDICATED:
            continue
        for line in read_label_lines(path):
            if line.drawn is not None:
                out.setdefault(path.stem, {}).setdefault(line.case_id, line.drawn)
    return out


def read_labels(folder: Path) -> dict[str, dict[ClaimKey, Derivability]]:
    """Every annotator's answers (adjudication not included), by annotator name, sorted."""
    found = sorted(labels_dir(folder).glob("*.jsonl")) if labels_dir(folder).is_dir() else []
    return {p.stem: read_label_file(p) for p in found if p.stem != ADJUDICATED}


def read_adjudicated(folder: Path) -> dict[ClaimKey, Derivability]:
    path = labels_dir(folder) / f"{ADJUDICATED}.jsonl"
    return read_label_file(path) if path.is_file() else {}
