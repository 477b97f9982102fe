"""`python -m harness.devtools.local_llm serve`: a stand-in `llama_cpp.server` package on PYTHONPATH (the fake server,
really listening), so the real command line, the environment handed to the command and the clean-up are tested
without building llama.cpp or loading a model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.devtools.llamacpp import LLAMA_CPP_VERSION
from harness.devtools.local_llm import DUMMY_API_KEY, main, note, server_installed

FAKE_SERVER = Path(__file__).with_name("llamacpp_fake_server.py")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, OSError):
        return False


def wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def fake_llama(tmp_path, monkeypatch):
    """A `llama_cpp` package whose `python -m llama_cpp.server` runs the fake server and records pid and argv."""
    root = tmp_path / "fakepkg"
    server_pkg = root / "llama_cpp" / "server"
    server_pkg.mkdir(parents=True)
    (root / "llama_cpp" / "__init__.py").write_text(f"__version__ = {LLAMA_CPP_VERSION!r}\n")
    (server_pkg / "__init__.py").write_text("")
    (server_pkg / "app.py").write_text("")
    (server_pkg / "__main__.py").write_text(
        textwrap.dedent(f"""
            import runpy, sys
            sys.argv = [{str(FAKE_SERVER)!r}, *sys.argv[1:], "--pid-file", {str(tmp_path / "server.pid")!r},
                        "--argv-file", {str(tmp_path / "argv.json")!r}]
            runpy.run_path({str(FAKE_SERVER)!r}, run_name="__main__")
        """)
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF fake")
    yield model
    for name in ("server.pid", "cmd.pid"):  # if the code under test leaked them, do not leak them further
        pid_file = tmp_path / name
        if pid_file.exists() and alive(pid := int(pid_file.read_text())):
            os.kill(pid, signal.SIGKILL)


def test_serve_runs_the_command_against_the_server_and_stops_it(tmp_path, fake_llama, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")
    seen = tmp_path / "seen.json"
    probe = textwrap.dedent(f"""
        import json, os, httpx
        base = os.environ["OPENAI_BASE_URL"]
        models = httpx.get(base + "/models", trust_env=False).json()
        json.dump({{"base": base, "key": os.environ["OPENAI_API_KEY"], "models": models}}, open({str(seen)!r}, "w"))
        raise SystemExit(5)
    """)
    code = main(
        [
            "--cache-dir",
            str(tmp_path / "cache"),
            "serve",
            "--model-file",
            str(fake_llama),
            "--log",
            str(tmp_path / "server.log"),
            "--server-args",
            "--n_threads 1 --flash_attn false",
            "--",
            sys.executable,
            "-c",
            probe,
        ]
    )
    assert code == 5  # the command's exit code is the session's
    record = json.loads(seen.read_text())
    assert record["base"].startswith("http://127.0.0.1:") and record["base"].endswith("/v1")
    assert record["key"] == DUMMY_API_KEY  # a real key is never handed to the local server
    assert record["models"]["data"][0]["id"] == "smollm2-135m"
    argv = json.loads((tmp_path / "argv.json").read_text())
    pairs = dict(zip(argv[0::2], argv[1::2], strict=False))
    assert pairs["--model"] == str(fake_llama) and pairs["--n_ctx"] == "8192" and pairs["--host"] == "127.0.0.1"
    assert record["base"] == f"http://127.0.0.1:{pairs['--port']}/v1"
    last_flash = max(i for i, arg in enumerate(argv) if arg == "--flash_attn")
    assert pairs["--n_threads"] == "1" and argv[last_flash + 1] == "false"  # --server-args come last, so they win
    assert wait_for(lambda: not alive(int((tmp_path / "server.pid").read_text())))
    assert "fake llama server starting" in (tmp_path / "server.log").read_text()


def test_a_server_that_cannot_start_is_a_clear_error_and_the_command_never_runs(tmp_path, fake_llama, capsys):
    marker = tmp_path / "ran"
    code = main(
        [
            "--cache-dir",
            str(tmp_path / "cache"),
            "serve",
            "--model-file",
            str(tmp_path / "absent.gguf"),
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w')",
        ]
    )
    assert code == 2
    assert "absent.gguf does not exist" in capsys.readouterr().err
    assert not marker.exists()


def test_sigterm_to_the_session_stops_the_command_and_the_server(tmp_path, fake_llama):
    cmd_pid = tmp_path / "cmd.pid"
    sleeper = f"import os, time; open({str(cmd_pid)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    wrapper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.devtools.local_llm",
            "--cache-dir",
            str(tmp_path / "cache"),
            "serve",
            "--model-file",
            str(fake_llama),
            "--log",
            str(tmp_path / "server.log"),
            "--",
            sys.executable,
            "-c",
            sleeper,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: cmd_pid.exists() and cmd_pid.read_text() != "", 20)
        server_pid = int((tmp_path / "server.pid").read_text())
        command_pid = int(cmd_pid.read_text())
        assert alive(server_pid) and alive(command_pid)
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(30) == 130
        assert wait_for(lambda: not alive(server_pid)) and wait_for(lambda: not alive(command_pid))
        assert "server stopped" in wrapper.stderr.read()
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait()


def test_server_installed_checks_version_and_server_extras(tmp_path, fake_llama, monkeypatch):
    assert server_installed()
    (tmp_path / "fakepkg" / "llama_cpp" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    assert not server_installed()  # another version must be rebuilt, not trusted


SERVER_LOG = """\
INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
llama_perf_context_print: prompt eval time =    1000.00 ms /   100 tokens (   10.00 ms per token,   100.00 tokens per second)
llama_perf_context_print:        eval time =    2000.00 ms /    50 runs   (   40.00 ms per token,    25.00 tokens per second)
INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print: prompt eval time =    1000.00 ms /   300 tokens (    3.33 ms per token,   300.00 tokens per second)
llama_perf_context_print:        eval time =    2000.00 ms /   150 runs   (   13.33 ms per token,    75.00 tokens per second)
INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK
"""


def test_closing_note_puts_the_reference_first_and_names_invalid_reasons(tmp_path):
    model = {
        "name": "openai:tiny@baseline", "model": "openai:tiny", "quality_cases": 4, "errors": 1,
        "verdict_accuracy": 0.25, "model_verdict_accuracy": 0.5, "claim_accuracy": 0.375, "unsafe_pass_rate": 0.0,
        "invalid_reply_rate": 0.5, "invalid_reasons": {"truncated": 1, "schema_error": 1},
        "latency_ms": {"mean": 61500.0},
    }  # fmt: skip
    reference = {
        "name": "reference", "model": "reference", "quality_cases": 4, "errors": 0, "verdict_accuracy": 1.0,
        "model_verdict_accuracy": 1.0, "claim_accuracy": 0.875, "unsafe_pass_rate": 0.0, "grounding_bacc": 0.9,
        "macro_f1": 0.8125, "invalid_reply_rate": 0.0, "invalid_reasons": {}, "latency_ms": {"mean": 6.4},
    }  # fmt: skip
    summary = {"run": {"run_id": "r"}, "conformance": {}, "variants": [model, reference]}  # as few keys as valid
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "llama-server.log").write_text(SERVER_LOG)
    text = note(tmp_path)
    assert (tmp_path / "closing-note.md").read_text() == text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    # the registry's closing-note metrics (grounding bAcc and macro-F1 too; n/a where a summary lacks them)
    assert rows[0].startswith("| reference | 4 | 0 | 100% | 100% | 88% | 0% | 90% | 0.812 | 0% | - | 6 ms |")
    assert rows[1] == (
        "| openai:tiny@baseline | 4 | 1 | 25% | 50% | 38% | 0% | n/a | n/a | 50% | schema_error x1, truncated x1 | 61.5 s |"
    )
    assert "prompt eval 200 tok/s, generation 50 tok/s; HTTP 500 answers: 1" in text


def test_note_on_a_folder_without_summary_is_a_clear_error(tmp_path, capsys):
    assert main(["note", str(tmp_path)]) == 2
    assert "summary.json: cannot read the run summary" in capsys.readouterr().err


def test_note_on_a_summary_that_is_not_one_is_a_clear_error(tmp_path, capsys):
    """summary.json is read through the Summary model: a file of another shape is refused, not half-read."""
    (tmp_path / "summary.json").write_text(json.dumps({"variants": [{"model": "no name"}]}))
    assert main(["note", str(tmp_path)]) == 2
    assert "summary.json: cannot read the run summary" in capsys.readouterr().err
