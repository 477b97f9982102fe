"""The interface every external data set adapter follows.

An adapter reads one source file record by record (a broken record is a
`RecordError` naming its line, never an exception that stops the import) and
turns each good record into cases of the CASE_FORMAT contract. Provenance and
the source's licence go into each case's `meta`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from harness.corpus.schema import Case

R = TypeVar("R", bound=BaseModel)


class RecordError(BaseModel):
    """One source record that could not be imported, and why."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    reason: str
    """A short category for the summary: `bad JSON`, `missing field`, `wrong type`, `empty field`, ..."""
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}: {self.message}"


class Adapter(Protocol[R]):
    """Turns one external data set's records into cases."""

    name: str
    """Short slug: the `vbench import` subcommand, the case-id prefix and a tag."""
    dataset: str
    """The data set's human-readable name and origin."""
    description: str
    """How a record becomes cases and where the gold labels come from (for the generated README)."""
    licence_note: str
    """One line naming the licence and the authors, kept in every case's `meta`."""
    licence_text: str
    """The full licence text, copied beside the generated cases."""

    def records(self, path: Path) -> Iterator[tuple[int, R | RecordError]]:
        """Each record of the file with its 1-based line number, or the error that line raised."""
        ...

    def to_cases(self, record: R) -> list[Case]:
        """The cases one good record yields."""
        ...
