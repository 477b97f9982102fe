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


@nox.session(python=PYTHON, venv_params=["--system-site-packages"])
def bench(session: nox.Session) -> None:
    """Harness overhead and concurrency against the raw client and Inspect AI (issue 7); figures to reports/bench/.

    inspect-ai and the profiler live in this session only. System site packages are visible so a machine that
    already has the project's dependencies does not download them again (the 10-minute budget).
    `nox -s bench -- --quick` is a small smoke run; any other arguments go to `python -m bench.run_bench`.
    """
    session.install("-e", ".[dev]", "inspect-ai==0.3.285", "pyinstrument>=4.6")
    session.run("python", "-m", "bench.run_bench", *session.posargs)
