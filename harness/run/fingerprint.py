"""Code fingerprints: a digest of source files and library versions, for what is kept only while the code that
made it is unchanged (replayed results, the report's case views)."""

from __future__ import annotations

import hashlib
import sys
from importlib import metadata
from pathlib import Path

LIBRARIES = ("pydantic", "pydantic-core", "sqlalchemy", "jinja2", "openai", "pyyaml")
SOURCE_SUFFIXES = {".py", ".j2", ".jinja", ".toml", ".json", ".html", ".css", ".js", ".yaml", ".yml", ".txt"}


def fingerprint_of(root: Path, parts: tuple[str, ...], salt: str) -> str:
    """sha256 over `salt`, Python's and the libraries' versions, and the source files of `parts` under `root`
    (relative path and bytes; a part is a file or a folder)."""
    digest = hashlib.sha256(f"{salt}\npython {sys.version}\n".encode())
    for name in LIBRARIES:
        try:
            digest.update(f"{name} {metadata.version(name)}\n".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} -\n".encode())
    files: list[Path] = []
    for part in parts:
        path = root / part
        files.extend([path] if path.is_file() else (p for p in path.rglob("*") if p.is_file()))
    for path in sorted(files):
        if "__pycache__" in path.parts or path.suffix not in SOURCE_SUFFIXES:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]
