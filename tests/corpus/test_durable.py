"""Whole-file writes: the file is there whole, owner-only, and a failed write leaves neither it nor a temp file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness.corpus.durable import write_whole


def test_a_file_is_written_whole_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "token"
    write_whole(path, "abc")
    write_whole(path, "second")  # replaced whole
    assert path.read_text() == "second" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["token"]


def test_a_write_that_fails_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space"):
        write_whole(tmp_path / "f.json", "{}")
    assert list(tmp_path.iterdir()) == []
