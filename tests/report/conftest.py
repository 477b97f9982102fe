"""Real runs for the report tests, made once per session: the hostile corpus through `vbench run`.

`llm_run` uses the real OpenAI client against the local OpenAI-compatible
server, with a variant whose model name is markup and a model reply that
carries a script before its JSON. With VBENCH_ARTIFACTS set (CI), the run
folders are kept there so the screenshot the browser test takes survives.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import last_user_message, verifier_responder
from harness.llm.modes import reset as reset_structured_modes
from harness.report.browser import APT_HINT, find_chromium
from tests.report.builders import HOSTILE_MODEL, write_hostile_corpus

MODEL_REPLY_XSS = "<script>window.__pwned='model-reply'</script><img src=x onerror=window.__pwned='model-img'>"


def artifact_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    base = os.environ.get("VBENCH_ARTIFACTS")
    if base:
        folder = Path(base) / name
        if folder.exists():
            import shutil

            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        return folder
    return tmp_path_factory.mktemp("report") / name


def hostile_responder(body: dict[str, Any]) -> str:
    """The default valid verifier reply; for the hostile case, markup before it (prose around JSON is allowed)."""
    reply = verifier_responder(body)
    return f"{MODEL_REPLY_XSS}\n{reply}" if "window.__pwned" in last_user_message(body) else reply


@pytest.fixture(scope="session")
def hostile_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_hostile_corpus(tmp_path_factory.mktemp("corpus") / "cases")


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory, hostile_corpus: Path) -> Path:
    """The offline reference verifier, two epochs; `vbench run` writes the report itself."""
    out = tmp_path_factory.mktemp("runs") / "reference-run"
    code = main(["run", "--cases", str(hostile_corpus), "--epochs", "2", "--no-cache", "--out", str(out)])
    assert code in (0, 1), code
    return out


@pytest.fixture(scope="session")
def llm_run(tmp_path_factory: pytest.TempPathFactory, hostile_corpus: Path) -> Iterator[Path]:
    """reference + a markup-named model over real HTTP, two epochs."""
    out = artifact_dir(tmp_path_factory, "browser-run")
    reset_structured_modes()
    with pytest.MonkeyPatch.context() as mp, LocalOpenAIServer() as server:
        mp.setenv("OPENAI_API_KEY", "sk-report-test-key-never-shown")
        server.responder = hostile_responder
        code = main(
            ["run", "--cases", str(hostile_corpus), "--model", "reference", "--model", HOSTILE_MODEL,
             "--base-url", server.base_url, "--epochs", "2", "--no-cache", "--out", str(out)]
        )  # fmt: skip
        assert code in (0, 1), code
    reset_structured_modes()
    yield out


def embedded(report: Path) -> dict[str, Any]:
    """The JSON data block of a report, as the page's script reads it."""
    html = report.read_text(encoding="utf-8")
    start = html.index('<script id="report-data" type="application/json">') + len(
        '<script id="report-data" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium for the browser tests: CI must have it (a skip there would hide a whole class of test)."""
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: no chromium binary on PATH ({APT_HINT} in .ci/run)")
        pytest.skip(f"no chromium binary on PATH; install Debian's with `{APT_HINT}`")
    return binary
