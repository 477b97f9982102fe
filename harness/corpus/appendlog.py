"""Append-only JSON-lines files (the run log's results.jsonl, the label files): the torn-tail rule, kept here only.

A writer appends whole lines, each ending in a newline. A crash or a full disk in the middle of a write leaves a
last line without one that does not parse: the torn tail. A reader skips it (it is no record and no error; any
other line that does not parse is an error naming its file and line). A writer ends it before appending, so a
new line never extends it: cut off (its bytes kept beside the file when asked), or, when the line is whole and
only its newline is missing, given its newline.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

T = TypeVar("T")


def read_lines(
    path: Path, parse: Callable[[bytes], T]
) -> Iterator[tuple[int, int, bytes, T | None, ValidationError | None]]:
    """(line number, byte offset, line, `parse(line)` or None, its error) for every non-blank line of the file.

    A line that does not parse and has no newline is the torn tail of a writer stopped mid-write (every whole
    line ends with one): reading ends there, and it is no corrupt line."""
    with path.open("rb") as fh:
        number, offset = 0, 0
        for line in fh:
            number += 1
            if line.strip():
                try:
                    yield number, offset, line, parse(line), None
                except ValidationError as exc:
                    if not line.endswith(b"\n"):
                        return
                    yield number, offset, line, None, exc
            offset += len(line)


def last_line(path: Path) -> tuple[int, bytes] | None:
    """(line number, bytes) of the file's last line when it has no newline; None when the file ends in one."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return None
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    return data.count(b"\n") + 1, data[cut:]


def torn_tail(path: Path, parse: Callable[[bytes], object]) -> tuple[int, bytes] | None:
    """(line number, bytes) of the torn tail `read_lines` skips, or None."""
    tail = last_line(path)
    if tail is None or not tail[1].strip():
        return None
    try:
        parse(tail[1])
    except ValidationError:
        return tail
    return None


def end_torn_tail(path: Path, parse: Callable[[bytes], object] | None = None, keep: Path | None = None) -> bytes:
    """Make the file end in a newline before an append; returns the bytes cut off (b"" when none).

    A last line without a newline is cut off, unless `parse` reads it whole (then it is given its newline, since
    readers count it); the cut bytes are appended to `keep`, one line, when given, so nothing is thrown away."""
    tail = last_line(path)
    if tail is None:
        return b""
    _, data = tail
    if parse is not None and data.strip():
        try:
            parse(data)
        except ValidationError:
            pass
        else:
            with path.open("ab") as fh:
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            return b""
    if keep is not None and data.strip():
        with keep.open("ab") as fh:
            fh.write(data + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size - len(data))
        os.fsync(fh.fileno())
    return data
