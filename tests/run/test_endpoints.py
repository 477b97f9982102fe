"""A run's endpoints, over real HTTP on 127.0.0.1: a missing key or an endpoint that does not answer stops
`vbench run` before the first case (exit 2, naming the variable or the URL); an endpoint that goes away
mid-run trips the breaker (exit 2), and `--resume` finishes the run."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.llm.reach import unreachable
from harness.run.folder import RESULTS_FILE, read_results
from harness.run.log import error_reason
from tests.run.corpus_builder import GOLD, quality_case, write_corpus
from tests.run.test_cli_run import llm_args

QUALITY = [f"q{i}" for i in range(1, 8)]


def closed_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def not_found_server() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that answers 404 to everything: reachable, though it serves no /models."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None: ...

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_no_key_exits_2_naming_the_variable_before_any_request(
    tmp_path: Path, openai_server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    assert main(llm_args(openai_server, corpus, tmp_path / "run")) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "openai:local-model" in err
    assert openai_server.models_requests == 0 and openai_server.request_count == 0
    assert not (tmp_path / "run" / RESULTS_FILE).exists()


def test_no_key_names_the_variable_api_key_env_gives(
    tmp_path: Path,
    openai_server: LocalOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-the-one-asked-for")
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    assert main(llm_args(openai_server, corpus, tmp_path / "run", "--api-key-env", "TEAM_VERIFIER_KEY")) == 2
    assert "TEAM_VERIFIER_KEY" in capsys.readouterr().err
    assert openai_server.models_requests == 0 and openai_server.request_count == 0


def test_closed_port_exits_2_with_the_url_and_reason_before_the_first_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-closed-port")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    args = ["run", "--cases", str(corpus), "--model", "openai:m", "--base-url", url, "--out", str(tmp_path / "run")]
    assert main([*args, "--no-report"]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach {url}" in err and "refused" in err.lower()
    assert not (tmp_path / "run" / RESULTS_FILE).exists()


def test_unknown_host_is_unreachable_and_says_so() -> None:
    reason = unreachable("http://no-such-host.invalid/v1", timeout=5)
    assert reason is not None and "ConnectError" in reason


def test_any_http_answer_is_reachable_and_the_probe_sends_no_completion(
    openai_server: LocalOpenAIServer, not_found_server: str
) -> None:
    assert unreachable(not_found_server) is None  # a 404 to GET /models: a server is there
    assert unreachable(openai_server.base_url) is None
    assert openai_server.models_requests == 1 and openai_server.request_count == 0
    assert unreachable(f"http://127.0.0.1:{closed_port()}/v1") is not None


def test_breaker_stops_the_run_and_resume_finishes_it(
    tmp_path: Path,
    openai_server: LocalOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-breaker")
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    out = tmp_path / "run"
    openai_server.script(*[Fault(kind="drop")] * 100)  # the endpoint answers GET /models, then drops every request
    args = llm_args(openai_server, corpus, out, "--no-cache", "--concurrency", "1", "--max-attempts", "1")
    args += ["--max-connection-failures", "3"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "failed 3 requests in a row with connection errors" in err and "--resume" in err
    model_records = [r for r in read_results(out) if r.variant != "policy"]
    assert [error_reason(r.error or "") for r in model_records] == ["connection"] * 3  # stopped at the third
    assert openai_server.request_count == 3

    openai_server.reset()  # the endpoint is back
    assert main([*args, "--resume"]) == 0  # the same command, resumed
    latest = {r.case_id: r for r in read_results(out) if r.variant != "policy"}
    assert sorted(latest) == QUALITY and all(r.error is None for r in latest.values())


def test_a_reply_resets_the_breaker(
    tmp_path: Path, openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-breaker")
    corpus = write_corpus(tmp_path / "cases", QUALITY)
    drops = [Fault(kind="drop")] * 2
    openai_server.script(*drops, Fault(kind="slow", delay_s=0), *drops, Fault(kind="slow", delay_s=0), *drops)
    args = llm_args(openai_server, corpus, tmp_path / "run", "--no-cache", "--concurrency", "1", "--max-attempts", "1")
    assert main([*args, "--max-connection-failures", "3", "--max-error-rate", "1"]) == 0


def test_progress_on_a_non_terminal_is_one_line_per_tenth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "cases")
    for n in range(13):  # 7 + 13 quality cases and 1 policy case: 21 units
        case = quality_case(sorted(GOLD)[n % len(GOLD)])
        case["id"] = f"more-{n}"
        (corpus / f"more-{n}.yaml").write_text(yaml.safe_dump(case, sort_keys=False))
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "run"), "--no-report", "--no-cache"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("verifying ")]
    steps = [line for line in lines if "units/s" in line]
    percents = [int(line.split("(")[1].split("%")[0]) for line in steps]
    assert [p // 10 for p in percents] == list(range(1, 11))  # one line as each tenth is passed, the last at 100%
    assert all("ETA " in line for line in steps)
