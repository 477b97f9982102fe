"""Fault injection (issue 17): `vbench run` against a local server that misbehaves on every request, on both
transports. Every case must end scored or recorded as an error, and the run must end within the bound computed
from the client settings (`worst_case_seconds`) and the concurrency."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.llm.openai_model import OpenAISettings, worst_case_seconds
from harness.run.folder import read_results
from harness.run.log import error_reason
from tests.run.corpus_builder import write_corpus
from tests.run.test_cli_run import api_key, llm_args  # noqa: F401 - api_key: a fixture
from tests.timing import assert_within

pytestmark = pytest.mark.usefixtures("api_key")  # every run here is an openai: model's, which needs a key

QUALITY = ["q1", "q2", "q3", "q4"]
CONCURRENCY = 2
SETTINGS = OpenAISettings(timeout=1.0, max_attempts=2, max_retry_after=0.5)  # the default back-off
SLOW_BODY_S = 15.0
UNCUT_S: dict[str, float] = {"huge Retry-After": 86400.0, "slow body": SLOW_BODY_S, "trickled body": 40.0}
"""Faults a deadline must cut: how long one attempt takes when it is not cut (a trickled body: ~40 s). The run's
time is bounded for these; the other faults end on their own and are checked by their records alone."""

# fault -> the reasons its cases may end with (None: scored, the model's reply came)
FAULTS: dict[str, tuple[Fault, set[str | None]]] = {
    "persistent 429": (Fault(kind="rate_limit", retry_after="1"), {"rate_limited"}),
    "huge Retry-After": (Fault(kind="rate_limit", retry_after="86400"), {"rate_limited"}),
    "persistent 500": (Fault(kind="server_error"), {"server_error"}),
    "persistent 503": (Fault(kind="server_error", status=503), {"server_error"}),
    "slow body": (Fault(kind="slow", delay_s=SLOW_BODY_S), {"timeout"}),
    "trickled body": (Fault(kind="trickle", delay_s=0.5), {"timeout"}),
    "truncated body": (Fault(kind="truncated"), {"connection", "bad_response"}),
    "dropped connection": (Fault(kind="drop"), {"connection"}),
    "non-JSON body": (Fault(kind="malformed"), {"bad_response"}),
    "HTML body": (Fault(kind="html"), {"bad_response"}),
    "non-JSON reply": (Fault(kind="not_json_content"), {None}),
}


def run_bound(cases: int, concurrency: int, settings: OpenAISettings, case_timeout: float | None = None) -> float:
    """The longest a run of `cases` model cases may take: rounds of `concurrency`, each case at its worst."""
    per_case = worst_case_seconds(settings)
    if case_timeout is not None:
        per_case = min(per_case, case_timeout)
    return math.ceil(cases / concurrency) * per_case


def faulty_run(tmp_path: Path, server: LocalOpenAIServer, fault: Fault, transport: str, *extra: str) -> float:
    """Every request of the run gets `fault`; returns the run's wall time."""
    server.script(*[fault] * 100)
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    args = llm_args(server, corpus, tmp_path / "run", "--no-cache", "--transport", transport)
    args += ["--concurrency", str(CONCURRENCY), "--max-error-rate", "1", "--timeout", str(SETTINGS.timeout)]
    args += ["--max-attempts", str(SETTINGS.max_attempts), "--max-retry-after", str(SETTINGS.max_retry_after)]
    started = time.monotonic()
    code = main([*args, *extra])
    elapsed = time.monotonic() - started
    assert code == 0, code
    return elapsed


WAITED_OUT = {"slow body", "trickled body"}
BODY_FAULTS = {"slow body", "trickled body", "truncated body", "dropped connection", "non-JSON body", "HTML body"}
"""Faults in reading a response, where the two transports differ: run on both; the others on the default."""
RUNS = [
    pytest.param(name, transport, marks=[pytest.mark.slow] if name in WAITED_OUT else [])
    for name, transport in [(n, "aiohttp") for n in sorted(FAULTS)] + [(n, "httpx") for n in sorted(BODY_FAULTS)]
]
"""The runs that wait out every attempt's deadline (several seconds each) are `slow`."""


@pytest.mark.parametrize(("name", "transport"), RUNS)
def test_every_case_ends_scored_or_as_an_error_within_the_bound(
    tmp_path: Path, openai_server: LocalOpenAIServer, name: str, transport: str
) -> None:
    fault, reasons = FAULTS[name]
    elapsed = faulty_run(tmp_path, openai_server, fault, transport)
    records = read_results(tmp_path / "run")
    quality = [r for r in records if r.kind == "quality"]
    assert sorted(r.case_id for r in quality) == QUALITY  # nothing lost, nothing twice
    ended = {None if r.error is None else error_reason(r.error) for r in quality}
    assert ended <= reasons, (name, [r.error for r in quality])
    if reasons == {None}:
        assert all(r.verdict is not None for r in quality)
    else:
        assert all(r.attempts in (0, SETTINGS.max_attempts) for r in quality)
    if name in UNCUT_S:
        rounds = math.ceil(len(QUALITY) / CONCURRENCY)
        assert_within(elapsed, run_bound(len(QUALITY), CONCURRENCY, SETTINGS), rounds * UNCUT_S[name])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert sum(summary["variants"][0]["errors_by_reason"].values()) == sum(r.error is not None for r in quality)


def test_a_case_timeout_shortens_the_bound(tmp_path: Path, openai_server: LocalOpenAIServer) -> None:
    """A server that never finishes a body: with --case-timeout the bound is the case timeout, not the retries."""
    elapsed = faulty_run(
        tmp_path, openai_server, Fault(kind="trickle", delay_s=10.0), "aiohttp", "--case-timeout", "0.8"
    )
    quality = [r for r in read_results(tmp_path / "run") if r.kind == "quality"]
    assert {error_reason(r.error or "") for r in quality} == {"case_timeout"}
    bound = run_bound(len(QUALITY), CONCURRENCY, SETTINGS, case_timeout=0.8)
    assert bound < run_bound(len(QUALITY), CONCURRENCY, SETTINGS)
    assert_within(elapsed, bound, broken=math.ceil(len(QUALITY) / CONCURRENCY) * UNCUT_S["trickled body"])


def test_faults_then_replies_are_retried_to_a_score(tmp_path: Path, openai_server: LocalOpenAIServer) -> None:
    """One fault of each kind, then a healthy server: with enough attempts every case is scored."""
    kinds = [f for f, _ in FAULTS.values() if f.kind != "not_json_content"]
    openai_server.script(*kinds)
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    args = llm_args(openai_server, corpus, tmp_path / "run", "--no-cache", "--timeout", "1", "--max-attempts", "12")
    study = tmp_path / "study.toml"  # back-off settings are study keys
    study.write_text('[model_settings."openai:local-model"]\nbackoff_base = 0.01\nbackoff_max = 0.05\n')
    assert main([*args, "--max-retry-after", "0.2", "--concurrency", "1", "--study", str(study)]) == 0
    quality = [r for r in read_results(tmp_path / "run") if r.kind == "quality"]
    assert [r.error for r in quality] == [None] * len(QUALITY)
    assert openai_server.pending_faults == 0
