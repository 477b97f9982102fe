"""The sha256 of the kit's own source: what certified, identified whether or not git tracks it."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import harness

SOURCE_SUFFIXES = (".py", ".j2", ".md", ".json", ".yaml", ".toml")


@cache
def kit_source_sha256(root: Path | None = None) -> str:
    """One sha256 over every source file of the `harness` package (relative path and bytes, in path order).

    Caches and compiled files are not source; the spec copy and prompts under the package are."""
    base = root or Path(harness.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(base).as_posix().encode()
        digest.update(len(rel).to_bytes(4, "big") + rel)
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()
