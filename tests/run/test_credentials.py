"""Credentials (issue 17): a base URL with user info is refused (exit 2) from a flag, the environment or a study
file, and no credential (the URL's or the API key, raw or base64) reaches any file a run writes."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from tests.llm.test_key_redaction import EchoingServer
from tests.run.corpus_builder import write_corpus

USER, PASSWORD = "alice", "pw-Z9q7-never-sent"
API_KEY = "sk-test-echoed-KEY-5c2e9d"


def forms(secret: str) -> list[str]:
    """A secret as it may appear: raw, base64 (Basic auth), and base64 of user:secret."""
    return [secret, base64.b64encode(secret.encode()).decode(), base64.b64encode(f"{USER}:{secret}".encode()).decode()]


def every_file_text(*folders: Path) -> str:
    """The bytes of every file below the folders (decoded leniently), to grep for secrets."""
    chunks = []
    for folder in folders:
        for path in sorted(folder.rglob("*")) if folder.exists() else []:
            if path.is_file():
                chunks.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(chunks)


def run_args(server: LocalOpenAIServer, tmp_path: Path, base_url: str | None) -> list[str]:
    args = ["run", "--cases", str(write_corpus(tmp_path / "cases")), "--model", "openai:local-model"]
    args += ["--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache")]
    return args + (["--base-url", base_url] if base_url else [])


@pytest.mark.parametrize("source", ["flag", "environment", "study file"])
def test_a_base_url_with_user_info_is_refused_and_nothing_leaks(
    tmp_path: Path,
    openai_server: LocalOpenAIServer,
    source: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = openai_server.base_url.replace("http://", f"http://{USER}:{PASSWORD}@")
    args = run_args(openai_server, tmp_path, url if source == "flag" else None)
    if source == "environment":
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    elif source == "study file":
        study = tmp_path / "study.yaml"
        study.write_text(f'model_settings:\n  "openai:local-model":\n    base_url: "{url}"\n', encoding="utf-8")
        args += ["--study", str(study)]
    assert main(args) == 2
    out = capsys.readouterr()
    assert "carries credentials" in out.err and "OPENAI_API_KEY" in out.err
    assert openai_server.request_count == 0  # nothing was sent
    written = every_file_text(tmp_path / "run", tmp_path / "cache") + out.out + out.err
    for form in forms(PASSWORD):
        assert form not in written


@pytest.mark.parametrize("mode", ["content", "401", "not_json"])
def test_an_echoed_key_reaches_no_file_the_run_writes(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server echoing the Authorization header into replies and errors: the run's results, report, summary,
    outcomes, manifest, response cache and kept results hold the key in no form."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with EchoingServer() as server:
        server.mode = mode
        code = main([*run_args(server, tmp_path, server.base_url), "--max-attempts", "1", "--max-error-rate", "1"])
    assert code in (0, 1)
    run = tmp_path / "run"
    assert {"results.jsonl", "report.html", "summary.json", "manifest.json"} <= {p.name for p in run.iterdir()}
    if mode == "content":
        assert any((tmp_path / "cache").rglob("*")), "the replies were cached: the cache is grepped too"
        assert "echo Bearer ***" in (run / "results.jsonl").read_text(encoding="utf-8")
    out = capsys.readouterr()
    written = every_file_text(run, tmp_path / "cache") + out.out + out.err
    for form in forms(API_KEY):
        assert form not in written
    assert os.environ["OPENAI_API_KEY"] == API_KEY
