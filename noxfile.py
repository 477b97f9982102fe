"""Developer and CI sessions. `nox -s tests` is the test command CI runs."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The whole test suite (what `.ci/run` runs)."""
    session.install("-e", ".[dev]")
    session.run("pytest", "-q", "-p", "no:cacheprovider", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", "harness", "tests", "noxfile.py")
    session.run("ruff", "format", "--check", "harness", "tests", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy over the package."""
    session.install("-e", ".[dev]")
    session.run("mypy", "harness")
