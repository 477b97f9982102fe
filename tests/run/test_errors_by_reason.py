"""`variants[].errors_by_reason` (issue 17): every result without a model reply, counted by its reason, in
summary.json, on the console and in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.run.log import error_reason
from tests.run.corpus_builder import write_corpus
from tests.run.test_cli_run import api_key, llm_args  # noqa: F401 - api_key: a fixture

pytestmark = pytest.mark.usefixtures("api_key")  # every run here is an openai: model's, which needs a key


def test_error_reason_is_the_word_before_the_detail() -> None:
    assert error_reason("timeout: no reply within 5 s") == "timeout"
    assert error_reason("harness_error: ValueError: x") == "harness_error"
    assert error_reason("rate_limited") == "rate_limited"


def test_errors_by_reason_in_summary_console_and_report(
    tmp_path: Path, openai_server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    openai_server.script(
        Fault(kind="rate_limit", retry_after="0"), Fault(kind="server_error"), Fault(kind="server_error"), "malformed"
    )
    args = llm_args(openai_server, corpus, out, "--no-cache", "--concurrency", "1", "--max-attempts", "1")
    args.remove("--no-report")
    code = main([*args, "--max-error-rate", "1"])
    assert code == 0
    (variant,) = json.loads((out / "summary.json").read_text())["variants"]
    assert variant["errors_by_reason"] == {"server_error": 2, "bad_response": 1, "rate_limited": 1}
    assert sum(variant["errors_by_reason"].values()) == variant["error_samples"] == 4
    console = capsys.readouterr().out
    assert "errors by reason [openai:local-model@baseline]: server_error 2, bad_response 1, rate_limited 1" in console
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "4 errors (server_error: 2, bad_response: 1, rate_limited: 1)" in html
    markdown = (out / "summary.md").read_text(encoding="utf-8")
    assert (
        "Errors by reason (results with no model reply): **openai:local-model@baseline**: server\\_error 2, bad\\_response 1, rate\\_limited 1"
        in markdown
    )


def test_no_errors_is_an_empty_mapping(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases")
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "run"), "--no-report", "--no-cache"]) == 0
    for variant in json.loads((tmp_path / "run" / "summary.json").read_text())["variants"]:
        assert variant["errors_by_reason"] == {}
