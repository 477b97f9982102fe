"""Whole-file writes that a crash or a second writer cannot tear: the one home of that rule outside a run folder
(a run folder's files go through `run.folder.write_lines`, which also refuses an orphaned writer)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_whole(path: Path, text: str) -> None:
    """Write `path` whole or not at all, durably: a temp file of its own beside it (two writers never share one),
    synced, then renamed into place. The file is readable by its owner only, as `mkstemp` makes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
