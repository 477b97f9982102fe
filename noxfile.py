"""Developer and CI sessions. `nox -s tests` is the test command CI runs."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The test suite without the tests marked `slow` (`nox -s slow` runs those; `.ci/run` runs both); with the
    ray extra, so the Ray executor's tests run too."""
    session.install("-e", ".[dev,ray]")
    session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *session.posargs)


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
    """What a user waits for (issue 14: whole `vbench run` against a raw client process sending the same requests,
    on the async and a threaded stdlib server; start-up), then harness overhead against the raw client and the
    peers (issue 7); figures to reports/bench/.

    inspect-ai and the profiler live in this session only. System site packages are visible so a machine that
    already has the project's dependencies does not download them again (the 10-minute budget). promptfoo, the
    second peer (issue 19), is an npm package: installed once with npm into ~/.cache/verifier-bench/promptfoo
    (npm's registry is its only network); without npm or Node the bench records it as not measured, and why.
    `nox -s bench -- --quick` is a small smoke run; any other arguments go to `python -m bench.run_bench`.
    """
    session.install("-e", ".[dev]", "inspect-ai==0.3.285", "pyinstrument>=4.6")
    session.run("python", "-m", "bench.promptfoo")
    session.run("python", "-m", "bench.run_bench", *session.posargs)


LOCAL_LLM_MODEL = "openai:smollm2-135m"  # the alias `harness.devtools.local_llm serve` gives the packaged SmolLM2-135M


@nox.session(name="local-llm", python=PYTHON, reuse_venv=True)
def local_llm(session: nox.Session) -> None:
    """A real model on this machine: llama.cpp's server + SmolLM2-135M over a fixed quality subset.

    Builds llama-cpp-python once (wheel and model cached under ~/.cache/verifier-bench), starts the server on a
    free 127.0.0.1 port, runs the reference verifier and the model with both prompts at concurrency 1 into
    reports/local-llm/<timestamp>/, and always stops the server. `nox -s local-llm -- smoke` is the CI smoke:
    five cases, one prompt. README: "A real model on this machine".
    """
    from datetime import UTC, datetime

    smoke = "smoke" in session.posargs
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = f"reports/local-llm/{'smoke-' if smoke else ''}{stamp}"
    subset = "cases/subsets/local-llm-smoke.txt" if smoke else "cases/subsets/local-llm.txt"
    prompts = ["baseline"] if smoke else ["baseline", "strict-evidence"]
    session.install("-e", ".")
    session.run_install("python", "-m", "harness.devtools.local_llm", "install")  # also under --install-only
    session.run(
        *("python", "-m", "harness.devtools.local_llm", "serve", "--log", f"{out}/llama-server.log", "--"),
        *("vbench", "run", "--model", "reference", "--model", LOCAL_LLM_MODEL),
        *(arg for prompt in prompts for arg in ("--prompt", prompt)),
        *("--cases", "cases/quality", "--filter", f"ids:{subset}", "--out", out),
        # one request at a time (the server serves one); no response cache, so every figure is measured now
        *("--concurrency", "1", "--no-cache", "--max-tokens", "512", "--timeout", "300", "--max-attempts", "2"),
    )
    # the closing note: the model next to the reference verifier, invalid-reply reasons, server throughput
    session.run("python", "-m", "harness.devtools.local_llm", "note", out)


@nox.session(python=PYTHON)
def ablation(session: nox.Session) -> None:
    """The reference baseline with each signal removed: dev/held-out splits and HaluEval part 1 (issue 18)."""
    session.install("-e", ".")
    session.run("python", "-m", "harness.cli.ablation", *session.posargs)


@nox.session(python=PYTHON)
def validity(session: nox.Session) -> None:
    """The validity study: decisions and CIs against a judge of known skill; writes reports/validity/<date>.md."""
    session.install("-e", ".")
    session.run("python", "-m", "harness.cli.validity", *session.posargs)


@nox.session(name="alert-study", python=PYTHON)
def alert_study(session: nox.Session) -> None:
    """The history alert rule's false-alarm rate and detection delay with the judge of known skill; writes
    reports/history/alert-<date>.md. `nox -s alert-study -- --chains 200` for a quicker look."""
    session.install("-e", ".")
    session.run("python", "-m", "harness.history.alert_study", *session.posargs)


@nox.session(name="estimate-validity", python=PYTHON)
def estimate_validity(session: nox.Session) -> None:
    """The estimate's validity study (PPI++ coverage and width, active choice) over a simulated population of
    known truth; writes reports/estimate/validity-<date>.md."""
    session.install("-e", ".")
    session.run("python", "-m", "harness.cli.estimate_validity", *session.posargs)


@nox.session(python=PYTHON, venv_params=["--system-site-packages"])
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs-material), built strictly: a broken link, a missing page or a stale
    reference page fails. The reference pages are generated from the code at build time. `-- serve` serves it."""
    session.install("-e", ".[docs]")
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:], env={"PYTHONPATH": "."})
        return
    session.run(
        "mkdocs",
        "build",
        "--strict",
        *session.posargs,
        env={"PYTHONPATH": ".", "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"},
    )


@nox.session(python=PYTHON)
def slow(session: nox.Session) -> None:
    """Only the tests marked `slow` (more than a few seconds each: whole runs against faulty servers, installs,
    the bench's smoke runs); `nox -s tests` leaves them out and `.ci/run` runs both sessions."""
    session.install("-e", ".[dev,ray]")
    session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", "slow", *session.posargs)


@nox.session(name="certify-java", python=PYTHON, venv_params=["--system-site-packages"])
def certify_java(session: nox.Session) -> None:
    """The Java implementation of the spec (sut-java/), certified over the protocol into reports/certify-java/.

    Installs the JDK, Gson and sqlite-jdbc with apt-get when they are missing (as root, like .ci/run), builds the
    jar with javac + jar, serves it on a free 127.0.0.1 port, runs `vbench certify --mode certification` on the
    policy corpus and always stops the server. Fails unless certificate.json says `certified`.
    """
    session.install("-e", ".")
    session.run("python", "-m", "harness.devtools.java_sut", "certify", "--install", "--out", "reports/certify-java")
    # The Jackson variant beside it (sut-java/jackson/), in a team's usual configuration: FAIL_ON_TRAILING_TOKENS and
    # STRICT_DUPLICATE_DETECTION on, INDENT_OUTPUT on (answers and the prompt's JSON pretty-printed).
    session.run(
        *("python", "-m", "harness.devtools.java_sut", "certify", "--install", "--jackson", "defaults,indent"),
        *("--out", "reports/certify-java-jackson"),
    )


@nox.session(python=PYTHON)
def mutation(session: nox.Session) -> None:
    """The kit's mutation suite: every seeded fault must fail `vbench certify`, every correct variant certify.

    Prints the mutation score per requirement id (faults caught/seeded) and the variants certified; exits 1
    when a fault certifies (a known kit gap aside, listed apart) or a variant fails.
    `nox -s mutation -- --only NAME ...` runs some seeds only.
    """
    session.install("-e", ".[dev]")
    session.run("python", "-m", "tests.kit.mutation", *session.posargs)
