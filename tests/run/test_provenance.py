"""Provenance: the sha of the package's own source tree, dirty with untracked files, whatever the cwd."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.provenance import PACKAGE_DIR, package_git_sha, spec_files


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def package_repo(tmp_path: Path) -> Path:
    """A git repository holding a package folder, committed clean."""
    root = tmp_path / "pkgrepo"
    (root / "harness").mkdir(parents=True)
    (root / "harness" / "__init__.py").write_text("x = 1\n")
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


def test_the_sha_is_the_package_trees_not_the_working_directorys(
    package_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "f").write_text("f")
    git(other, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other")
    monkeypatch.chdir(other)
    sha = package_git_sha(package_repo / "harness")
    assert sha == git(package_repo, "rev-parse", "HEAD") != git(other, "rev-parse", "HEAD")
    assert len(sha or "") == 40


def test_an_untracked_file_makes_the_tree_dirty(package_repo: Path) -> None:
    (package_repo / "harness" / "new_module.py").write_text("y = 2\n")
    sha = package_git_sha(package_repo / "harness")
    assert sha == git(package_repo, "rev-parse", "HEAD") + "-dirty"


def test_a_changed_tracked_file_makes_the_tree_dirty(package_repo: Path) -> None:
    (package_repo / "harness" / "__init__.py").write_text("x = 2\n")
    assert (package_git_sha(package_repo / "harness") or "").endswith("-dirty")


def test_outside_git_there_is_no_sha(tmp_path: Path) -> None:
    (tmp_path / "plain" / "harness").mkdir(parents=True)
    assert package_git_sha(tmp_path / "plain" / "harness") is None


def test_the_running_package_is_read_from_its_own_tree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    sha = package_git_sha()
    assert sha is not None and sha.removesuffix("-dirty") == git(PACKAGE_DIR, "rev-parse", "HEAD")


@pytest.fixture
def host_repo(tmp_path: Path) -> Path:
    """Another project's repository, committed clean, whose .venv is ignored."""
    root = tmp_path / "host"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".venv/\n")
    (root / "app.py").write_text("print('host')\n")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "host")
    return root


def test_a_copy_in_an_ignored_folder_of_another_repository_has_no_sha(host_repo: Path) -> None:
    """The review's case: harness/ installed into another repo's ignored site-packages is not that repo's HEAD."""
    site = host_repo / ".venv" / "lib" / "python3" / "site-packages"
    shutil.copytree(PACKAGE_DIR, site / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    assert git(host_repo, "status", "--porcelain") == ""  # the host is clean: its HEAD would read as certified
    assert package_git_sha(site / "harness") is None
    code = (
        "from harness.run.provenance import PACKAGE_DIR, package_git_sha; print(PACKAGE_DIR); print(package_git_sha())"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=host_repo, env=env, capture_output=True, text=True, check=True
    )
    where, sha = out.stdout.split()
    assert Path(where) == (site / "harness").resolve() and sha == "None", out.stdout


def test_an_untracked_copy_inside_another_repository_has_no_sha(host_repo: Path) -> None:
    (host_repo / "vendor" / "harness").mkdir(parents=True)
    (host_repo / "vendor" / "harness" / "__init__.py").write_text("x = 1\n")
    assert package_git_sha(host_repo / "vendor" / "harness") is None


def test_spec_files_hash_every_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "spec.md").write_text("x")
    (tmp_path / "INTERPRETATION.md").write_text("y")
    got = spec_files(tmp_path)
    assert list(got) == ["INTERPRETATION.md", "a/spec.md"]
    assert got["a/spec.md"] == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
