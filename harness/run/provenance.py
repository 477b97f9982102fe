"""Provenance: which code ran, and against which spec. An auditor must be able to trust both.

The git sha is read from the package's own source tree (where `harness` was imported from), never from
the working directory: run from another repository, the answer is still this package's commit. The
tree is dirty when a tracked file differs *or* an untracked, not ignored file exists (a new case or
module that was never committed changes what ran). A package that merely lies inside some repository
(a copy in an ignored `.venv/.../site-packages` of another project) is not that repository's code:
its files must be tracked there, else there is no sha (an installed package, no git checkout).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import harness

PACKAGE_DIR = Path(harness.__file__).resolve().parent
SOURCE_ROOT = PACKAGE_DIR.parent


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


NO_CHECKOUT = "installed package, no git checkout"
"""What the certificate says in place of a sha when the running code is not tracked in any git work tree."""


def source_tree(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The git work tree whose commit holds the package's source, or None (an installed copy has none).

    The package's `__init__.py` must be tracked there: a copy lying in an ignored or untracked folder of
    another repository is not that repository's code, whatever its HEAD says.
    """
    package_dir = package_dir.resolve()
    try:
        top = Path(_git(package_dir, "rev-parse", "--show-toplevel")).resolve()
    except (OSError, subprocess.SubprocessError):
        return None
    if not package_dir.is_relative_to(top):
        return None
    marker = (package_dir / "__init__.py").relative_to(top).as_posix()
    try:
        _git(top, "ls-files", "--error-unmatch", "--", marker)
    except (OSError, subprocess.SubprocessError):
        return None
    return top


def package_git_sha(package_dir: Path = PACKAGE_DIR) -> str | None:
    """The full sha of the commit the running code came from, `-dirty` when anything differs; None outside git."""
    top = source_tree(package_dir)
    if top is None:
        return None
    try:
        sha = _git(top, "rev-parse", "HEAD")
        dirty = _git(top, "status", "--porcelain", "--untracked-files=normal")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def spec_files(spec_dir: Path, root: Path | None = None) -> dict[str, str]:
    """Every file of the spec folder (the catalogue's source), path -> sha256, in path order."""
    base = root or spec_dir
    return {str(p.relative_to(base)): file_sha256(p) for p in sorted(spec_dir.rglob("*")) if p.is_file()}
